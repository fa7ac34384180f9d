package localfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

func TestRoutedConfinesInsideAndReachesOutside(t *testing.T) {
	ctx := context.Background()
	root, away := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(away, filepath.Join(root, "link")))
	r, err := NewRouted(root)
	require.NoError(t, err)

	// Inside the root: a link that leads out is refused, nothing lands outside.
	err = r.WriteFile(ctx, filepath.Join(root, "link", "x.txt"), []byte("no"))
	require.True(t, errors.Is(err, capabilities.ErrOutsideRoot), "%v", err)
	require.NoFileExists(t, filepath.Join(away, "x.txt"))

	// Inside and plain: written.
	require.NoError(t, r.WriteFile(ctx, filepath.Join(root, "a", "b.txt"), []byte("in")))
	got, _, err := capabilities.ReadFile(ctx, r, filepath.Join(root, "a", "b.txt"))
	require.NoError(t, err)
	require.Equal(t, "in", string(got))

	// Outside the root (an approved write being undone): reached.
	out := filepath.Join(away, "approved.txt")
	require.NoError(t, r.WriteFile(ctx, out, []byte("out")))
	require.FileExists(t, out)
	require.NoError(t, r.Remove(ctx, out))
	require.NoFileExists(t, out)
}
