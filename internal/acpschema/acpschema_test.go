package acpschema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/shared"
)

// TestEmbeddedSchemaIsShared checks the embedded copies against the wire
// spec in ../shared/acp.
func TestEmbeddedSchemaIsShared(t *testing.T) {
	t.Parallel()
	dir := shared.Dir(t, shared.ACP)
	for name, embedded := range map[string][]byte{"schema.json": stableSchema, "schema.unstable.json": unstableSchema} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.True(t, string(want) == string(embedded), "internal/acpschema/%s differs from ../shared/acp/%s: copy it again", name, name)
	}
}

func TestEmbeddedSchemasValidate(t *testing.T) {
	t.Parallel()
	stable, err := Stable()
	require.NoError(t, err)
	unstable, err := Unstable()
	require.NoError(t, err)
	update := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`)
	for _, v := range []*Validator{stable, unstable} {
		require.NoError(t, v.CheckFrame(update, "session/update"))
		require.NoError(t, v.CheckFrame([]byte(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`), "session/prompt"))
		require.ErrorContains(t, v.CheckFrame([]byte(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"bored"}}`), "session/prompt"), "PromptResponse")
		require.ErrorContains(t, v.CheckFrame([]byte(`{"method":"session/update","jsonrpc":"2.0","params":{}}`), ""), "envelope keys")
	}
	// A child session's announcement exists only in the unstable surface.
	child := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"subagent_update","sessionId":"c","title":"t","cwd":"/"}}}`)
	require.NoError(t, unstable.CheckFrame(child, "session/update"))
	require.Error(t, stable.CheckFrame(child, "session/update"))
}
