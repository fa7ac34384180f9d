package snapshots

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A terminal/create request keeps its shape and cwd, but not the
// machine's confined argv; other requests keep their command.
func TestTerminalCreateArgvIsTokenized(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":4,"method":"terminal/create","params":{"sessionId":"sid-1","command":"/usr/bin/env","args":["-i","HOME=/root","/usr/bin/bwrap","--bind","/tmp/dsh-acp-tmp-1","/tmp","--","bash","-c","ls"],"cwd":"/w","outputByteLimit":30000}}
{"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":{"command":"kept","args":["kept"]}}
`
	got, err := NormalizeStdout([]byte(in), "/w", []string{"sid-1"})
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"sessionId":"{{sessionId}}","command":"{{terminalCommand}}","args":"{{terminalArgs}}","cwd":"{{cwd}}","outputByteLimit":30000}}
{"jsonrpc":"2.0","id":2,"method":"session/request_permission","params":{"command":"kept","args":["kept"]}}
`, string(got))
	again, err := NormalizeStdout(got, "", nil)
	require.NoError(t, err)
	assert.Equal(t, string(got), string(again), "idempotent")
}
