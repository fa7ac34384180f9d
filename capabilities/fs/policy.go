package fs

import "sync"

// policy is one session's fs-policy: the version (capabilities.FileInfo
// Version, tools contract § 7: any stable equivalent of
// `<mtimeMs>:<size>`; it never reaches the wire) of every file identity
// (FileInfo.ID) it has read, written or edited. Mutations (check, then
// write) are serialized so two calls of one session cannot interleave
// between the version check and the rename.
type policy struct {
	mu   sync.Mutex // guards seen
	seen map[string]string

	mutate sync.Mutex // held by write and edit from their checks to the record
}

func newPolicy() *policy { return &policy{seen: map[string]string{}} }

// observed returns the version last recorded for id.
func (p *policy) observed(id string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.seen[id]
	return v, ok
}

// observe records v as the version the session has seen for id.
func (p *policy) observe(id, v string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[id] = v
}
