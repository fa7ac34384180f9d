package localfs

import (
	"context"
	"io"
	"path/filepath"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// Routed is the local filesystem for a caller that may legitimately reach
// paths outside its roots (an /undo replaying approved writes): a path that
// lies lexically under a root is resolved beneath it (the deepest such
// root), confined like [New]; any other absolute path goes through
// [Unconfined]. So a symbolic link swapped into the workspace still cannot
// redirect a write meant for a file inside it.
type Routed struct {
	inside  []*FS
	outside *FS
}

var _ capabilities.Files = (*Routed)(nil)

// NewRouted returns a [Routed] filesystem over root and the extra roots.
func NewRouted(root string, extra ...string) (*Routed, error) {
	r := &Routed{outside: Unconfined()}
	for _, dir := range append([]string{root}, extra...) {
		in, err := New(dir)
		if err != nil {
			return nil, err
		}
		r.inside = append(r.inside, in)
	}
	return r, nil
}

// pick returns the filesystem that resolves path.
func (r *Routed) pick(path string) *FS {
	p := filepath.Clean(path)
	best, depth := r.outside, -1
	for _, in := range r.inside {
		for _, root := range [2]string{in.root, in.realRoot} {
			if under(p, root) && len(root) > depth {
				best, depth = in, len(root)
			}
		}
	}
	return best
}

// under reports whether p is root or lies beneath it (both clean).
func under(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
}

// Stat implements capabilities.Files.
func (r *Routed) Stat(ctx context.Context, path string) (capabilities.FileInfo, error) {
	return r.pick(path).Stat(ctx, path)
}

// Open implements capabilities.Files.
func (r *Routed) Open(ctx context.Context, path string) (io.ReadCloser, capabilities.FileInfo, error) {
	return r.pick(path).Open(ctx, path)
}

// WriteFile implements capabilities.Files.
func (r *Routed) WriteFile(ctx context.Context, path string, data []byte) error {
	return r.pick(path).WriteFile(ctx, path, data)
}

// Remove implements capabilities.Files.
func (r *Routed) Remove(ctx context.Context, path string) error {
	return r.pick(path).Remove(ctx, path)
}
