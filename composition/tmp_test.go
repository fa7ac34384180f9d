package composition_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bashRun is a bash call running command.
func bashRun(command string) toolCall {
	args, _ := json.Marshal(map[string]string{"command": command, "description": "run"})
	return toolCall{Name: "bash", Args: string(args)}
}

// In the default composition a session's confined commands share one
// private /tmp, which another session does not see.
func TestOneTmpPerSession(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	p.script("put", bashRun("echo kept > /tmp/dsh-session-probe && echo put"))
	p.script("get", bashRun("cat /tmp/dsh-session-probe || echo missing"))
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, nil)
	a := srv.newSession(t, ws).SessionID
	b := srv.newSession(t, ws).SessionID

	stop, _ := srv.prompt(t, a, "put")
	require.Equal(t, "end_turn", stop)
	require.Contains(t, lastResult(t, root, a).text(), "put")
	stop, _ = srv.prompt(t, a, "get")
	require.Equal(t, "end_turn", stop)
	assert.Contains(t, lastResult(t, root, a).text(), "kept", "the file survives to the session's next command")
	stop, _ = srv.prompt(t, b, "get")
	require.Equal(t, "end_turn", stop)
	assert.Contains(t, lastResult(t, root, b).text(), "missing", "another session has its own /tmp")
	assert.NoFileExists(t, "/tmp/dsh-session-probe", "the host's /tmp is untouched")
}
