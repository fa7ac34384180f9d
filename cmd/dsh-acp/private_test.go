//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// An existing --sessions-root open to others is made private before the
// SQLite store writes into it, and sessions.db with its -wal and -shm
// files is 0600: judged by the modes on disk after a session was created
// over the wire.
func TestSQLiteSessionsArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	home, cwd, sessions := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "shared")
	require.NoError(t, os.Mkdir(sessions, 0o755))
	require.NoError(t, os.Chmod(sessions, 0o755))
	cfg := filepath.Join(home, "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"store":"sqlite"}`), 0o600))
	s := start(t, []string{"--sessions-root", sessions, "--config", cfg}, map[string]string{"HOME": home})
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	s.until(`"id":0`)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + cwd + `","mcpServers":[]}}`)
	s.until(`"id":1`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}`)
	s.until(`"id":2`)

	fi, err := os.Stat(sessions)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the sessions root")
	db := filepath.Join(sessions, "sessions.db")
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		fi, err := os.Stat(f)
		require.NoError(t, err, f)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
}
