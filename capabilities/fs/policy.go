package fs

import (
	"os"
	"sync"
)

// version identifies one state of a file's content (tools contract § 7: any
// stable equivalent of `<mtimeMs>:<size>`; it never reaches the wire). The
// inode catches a file replaced by rename with the same size and mtime.
type version struct {
	mtime int64 // nanoseconds
	size  int64
	ino   uint64
}

// versionOf derives the version from stat information.
func versionOf(fi os.FileInfo) version {
	return version{mtime: fi.ModTime().UnixNano(), size: fi.Size(), ino: inode(fi)}
}

// policy is one session's fs-policy: the version of every file identity it
// has read, written or edited. Mutations (check, then write) are serialized
// so two calls of one session cannot interleave between the version check
// and the rename.
type policy struct {
	mu   sync.Mutex // guards seen
	seen map[string]version

	mutate sync.Mutex // held by write and edit from their checks to the record
}

func newPolicy() *policy { return &policy{seen: map[string]version{}} }

// observed returns the version last recorded for key.
func (p *policy) observed(key string) (version, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.seen[key]
	return v, ok
}

// observe records v as the version the session has seen for key.
func (p *policy) observe(key string, v version) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[key] = v
}
