//go:build unix

package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/sqlite"
	"github.com/dsh-acp/dsh-acp/session/storetest"
)

// The database holds every conversation: it and its -wal and -shm files
// are the user's alone (0600) whatever the umask, and an existing database
// left readable by others is tightened on open. Judged by the modes on
// disk after real writes.
func TestDatabaseFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022) // the common umask, which gives SQLite's own files 0644
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	ctx := context.Background()
	g := storetest.NewGen(0)
	g.Turn(1, 3)
	require.NoError(t, st.Append(ctx, session.Header{ID: "s1", CreatedAt: storetest.BaseTime, Cwd: "/w"}, g.Take()))
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		require.NoError(t, err, f)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
	require.NoError(t, st.Close())

	// A database an older build left world-readable is tightened.
	require.NoError(t, os.Chmod(path, 0o644))
	st, err = sqlite.Open(path)
	require.NoError(t, err)
	defer func() { _ = st.Close() }()
	_, _, err = st.Load(ctx, "s1")
	require.NoError(t, err)
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		require.NoError(t, err, f)
		require.Zero(t, fi.Mode().Perm()&0o077, f)
	}
}
