package composition

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// A hook consent that appears in hook-consent.json behind the agent's back
// (a confined command writing the state directory) does not let a
// project's hooks run; the consent the agent records itself does, and a
// consent removed behind its back is gone. Judged by the store's answer
// and the bytes on disk.
func TestForgedHookConsentIsNotHonoured(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dsh-acp", "hook-consent.json")
	store := newConsentStore(path, zerolog.Nop())
	require.False(t, store.trusted("/p", "h1"))

	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(`{"projects":{"/p":"h1"}}`), 0o600))
	require.False(t, store.trusted("/p", "h1"), "a consent written behind the agent's back")

	require.NoError(t, store.remember("/q", "h2"))
	require.True(t, store.trusted("/q", "h2"))
	require.False(t, store.trusted("/p", "h1"))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(data), `"/p"`, "the agent's write drops the forged consent from the file")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	require.NoError(t, os.WriteFile(path, []byte(`{"projects":{}}`), 0o600))
	require.False(t, store.trusted("/q", "h2"), "a consent taken away behind its back")

	// A file that was there when the agent started is trusted as it was.
	require.NoError(t, os.WriteFile(path, []byte(`{"projects":{"/r":"h3"}}`), 0o600))
	require.True(t, newConsentStore(path, zerolog.Nop()).trusted("/r", "h3"))
}
