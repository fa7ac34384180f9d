package localfs

import (
	"context"
	"io"
	"path/filepath"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// Routed is the local filesystem for a caller that may legitimately reach
// paths outside a root (an /undo replaying approved writes): a path that
// lies lexically under the root is resolved beneath it, confined like
// [New]; any other absolute path goes through [Unconfined]. So a symbolic
// link swapped into the workspace still cannot redirect a write meant for
// a file inside it.
type Routed struct {
	inside, outside *FS
}

var _ capabilities.Files = (*Routed)(nil)

// NewRouted returns a [Routed] filesystem over root.
func NewRouted(root string) (*Routed, error) {
	in, err := New(root)
	if err != nil {
		return nil, err
	}
	return &Routed{inside: in, outside: Unconfined()}, nil
}

// pick returns the filesystem that resolves path.
func (r *Routed) pick(path string) *FS {
	p := filepath.Clean(path)
	if under(p, r.inside.root) || under(p, r.inside.realRoot) {
		return r.inside
	}
	return r.outside
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
