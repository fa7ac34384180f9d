package capabilities_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/localfs"
)

// bufferHost is an editor's files: unsaved buffers over the disk, every
// request recorded. Without read or write it answers ErrUnsupported.
type bufferHost struct {
	read, write bool
	fail        bool // every read fails (as for a binary file)

	mu      sync.Mutex
	buffers map[string]string
	reqs    []string
}

func (h *bufferHost) Offers() (read, write bool) { return h.read, h.write }

func (h *bufferHost) ReadText(_ context.Context, path string) (string, error) {
	if !h.read {
		return "", errors.ErrUnsupported
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reqs = append(h.reqs, "read "+filepath.Base(path))
	if h.fail {
		return "", errors.New("cannot open a binary file")
	}
	if b, ok := h.buffers[path]; ok {
		return b, nil
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

func (h *bufferHost) WriteText(_ context.Context, path, content string) error {
	if !h.write {
		return errors.ErrUnsupported
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reqs = append(h.reqs, "write "+filepath.Base(path))
	if _, ok := h.buffers[path]; ok {
		h.buffers[path] = content
		return nil
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

func (h *bufferHost) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append([]string{}, h.reqs...)
	h.reqs = nil
	return out
}

func mustLocal(t *testing.T, root string) *localfs.FS {
	t.Helper()
	l, err := localfs.New(root)
	require.NoError(t, err)
	return l
}

func through(t *testing.T, h *bufferHost) (capabilities.Files, string, string) {
	t.Helper()
	base := t.TempDir()
	root, out := filepath.Join(base, "root"), filepath.Join(base, "out")
	require.NoError(t, os.Mkdir(root, 0o755))
	require.NoError(t, os.Mkdir(out, 0o755))
	local, err := localfs.New(root)
	require.NoError(t, err)
	return capabilities.Through(local, h), root, out
}

func TestThroughVersionsByContentAndSkipsTheReadAfterItsOwnWrite(t *testing.T) {
	ctx := context.Background()
	h := &bufferHost{read: true, write: true, buffers: map[string]string{}}
	files, root, _ := through(t, h)
	a := filepath.Join(root, "a.txt")
	require.NoError(t, os.WriteFile(a, []byte("disk"), 0o644))
	h.buffers[a] = "buffer"

	b, info, err := capabilities.ReadFile(ctx, files, a)
	require.NoError(t, err)
	assert.Equal(t, "buffer", string(b))
	assert.Equal(t, capabilities.ContentVersion([]byte("buffer")), info.Version)
	local, err := localfs.New(root)
	require.NoError(t, err)
	li, err := local.Stat(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, li.ID, info.ID, "identity is the local file's")
	assert.Equal(t, []string{"read a.txt"}, h.requests())

	require.NoError(t, files.WriteFile(ctx, a, []byte("mine")))
	st, err := files.Stat(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, capabilities.ContentVersion([]byte("mine")), st.Version)
	assert.Equal(t, []string{"write a.txt"}, h.requests(), "the version of its own write costs no read")

	// Once spent, or when the disk changed since, the editor is asked.
	st, err = files.Stat(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, capabilities.ContentVersion([]byte("mine")), st.Version)
	assert.Equal(t, []string{"read a.txt"}, h.requests())
	require.NoError(t, files.WriteFile(ctx, a, []byte("again")))
	require.NoError(t, os.WriteFile(a, []byte("someone saved"), 0o644))
	h.buffers[a] = "someone typed"
	st, err = files.Stat(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, capabilities.ContentVersion([]byte("someone typed")), st.Version)
	assert.Equal(t, []string{"write a.txt", "read a.txt"}, h.requests())

	require.NoError(t, files.Remove(ctx, a))
	_, err = os.Stat(a)
	assert.ErrorIs(t, err, fs.ErrNotExist, "removal is local")
	assert.Empty(t, h.requests())
}

func TestThroughRefusesBeforeAskingAndFallsBackPerMethod(t *testing.T) {
	ctx := context.Background()
	h := &bufferHost{read: true, write: true, buffers: map[string]string{}}
	files, root, out := through(t, h)
	require.NoError(t, os.WriteFile(filepath.Join(out, "s"), []byte("secret"), 0o644))
	require.NoError(t, os.Symlink(out, filepath.Join(root, "link")))
	for _, p := range []string{filepath.Join(root, "link", "s"), filepath.Join(out, "s"), filepath.Join(root, "..", "out", "s")} {
		_, _, err := files.Open(ctx, p)
		assert.ErrorIs(t, err, capabilities.ErrOutsideRoot, p)
		assert.ErrorIs(t, files.WriteFile(ctx, p, []byte("x")), capabilities.ErrOutsideRoot, p)
		_, err = files.Stat(ctx, p)
		assert.ErrorIs(t, err, capabilities.ErrOutsideRoot, p)
	}
	assert.Empty(t, h.requests())

	// A file the disk lacks is missing: the editor is not asked (creating
	// a file costs only its write).
	_, _, err := files.Open(ctx, filepath.Join(root, "new.txt"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Empty(t, h.requests())
	require.NoError(t, files.WriteFile(ctx, filepath.Join(root, "new.txt"), []byte("made")))
	st, err := files.Stat(ctx, filepath.Join(root, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, capabilities.ContentVersion([]byte("made")), st.Version)
	assert.Equal(t, []string{"write new.txt"}, h.requests(), "one round trip: the write")

	// A file on disk the editor cannot read is read from the disk.
	bin := filepath.Join(root, "bin")
	require.NoError(t, os.WriteFile(bin, []byte{0, 1, 2}, 0o644))
	failing := &bufferHost{read: true, write: true, buffers: map[string]string{}, fail: true}
	files2 := capabilities.Through(mustLocal(t, root), failing)
	b, info, err := capabilities.ReadFile(ctx, files2, bin)
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 1, 2}, b)
	st, err = files2.Stat(ctx, bin)
	require.NoError(t, err)
	assert.Equal(t, info.Version, st.Version, "Stat and Open agree on the disk's version")
	assert.Equal(t, []string{"read bin", "read bin"}, failing.requests())

	// Reads only: writes land on the disk.
	ro := &bufferHost{read: true, buffers: map[string]string{}}
	files, root, _ = through(t, ro)
	a := filepath.Join(root, "a.txt")
	require.NoError(t, files.WriteFile(ctx, a, []byte("local")))
	b, err = os.ReadFile(a)
	require.NoError(t, err)
	assert.Equal(t, "local", string(b))
	assert.Empty(t, ro.requests())
	// Neither: everything is local, with local versions.
	none := &bufferHost{}
	files, root, _ = through(t, none)
	a = filepath.Join(root, "a.txt")
	require.NoError(t, os.WriteFile(a, []byte("x"), 0o644))
	_, info, err = capabilities.ReadFile(ctx, files, a)
	require.NoError(t, err)
	assert.NotContains(t, info.Version, "sha256:")
}
