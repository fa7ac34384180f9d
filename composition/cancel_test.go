package composition_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In the default composition a cancelled prompt is answered after its turn
// has ended: the tool card that fails during the teardown reaches the
// editor before the response (ACP: every update of a turn precedes it).
func TestCancelAnswersAfterEveryUpdateOfTheTurn(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, nil)
	sid := srv.newSession(t, ws).SessionID
	args, _ := json.Marshal(map[string]string{"command": "sleep 30", "description": "wait"})
	p.script("wait", toolCall{Name: "bash", Args: string(args)})

	mark := srv.c.mark()
	id, ch := srv.c.request("session/prompt", promptParams(sid, "wait"))
	require.Eventually(t, func() bool {
		for _, u := range updates(srv.c.since(mark), sid) {
			if strings.Contains(u, `"sessionUpdate":"tool_call"`) {
				return true
			}
		}
		return false
	}, waitFor, 5*time.Millisecond, "the bash card never appeared")
	time.Sleep(50 * time.Millisecond) // let the command start
	srv.c.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	f := srv.c.await(ch, "cancelled prompt")
	var r struct {
		StopReason string `json:"stopReason"`
	}
	require.NoError(t, json.Unmarshal(f.Result, &r))
	assert.Equal(t, "cancelled", r.StopReason)

	lines := srv.c.since(mark)
	resp, lastUpdate, failed := -1, -1, -1
	for i, l := range lines {
		var fr struct {
			ID     *int   `json:"id"`
			Method string `json:"method"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &fr))
		switch {
		case fr.ID != nil && *fr.ID == id && fr.Method == "":
			resp = i
		case fr.Method == "session/update" && strings.Contains(l, sid):
			lastUpdate = i
			if strings.Contains(l, `"status":"failed"`) {
				failed = i
			}
		}
	}
	require.GreaterOrEqual(t, resp, 0)
	require.GreaterOrEqual(t, failed, 0, "the interrupted command's card ends failed")
	assert.Less(t, lastUpdate, resp, "no update after the response")
	time.Sleep(100 * time.Millisecond)
	assert.Len(t, updates(srv.c.since(mark), sid), len(updates(lines, sid)), "nothing arrives later")
}
