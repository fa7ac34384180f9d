package acp_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/internal/acpschema"
)

// checkFrames validates agent frames (responses of method, and whatever
// came before them) against the ACP schema.
func checkFrames(t *testing.T, method, resp string, before []string) {
	t.Helper()
	v, err := acpschema.Stable()
	require.NoError(t, err)
	require.NoError(t, v.CheckFrame([]byte(resp), method), resp)
	for _, l := range before {
		require.NoError(t, v.CheckFrame([]byte(l), ""), l)
	}
}

func newSessionIn(t *testing.T, c *child, ws string) string {
	t.Helper()
	resp, _ := c.call("session/new", `{"cwd":`+acp.JSONQuote(ws)+`,"mcpServers":[]}`)
	var nr struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp), &nr), resp)
	require.NotEmpty(t, nr.Result.SessionID, resp)
	return nr.Result.SessionID
}

type listed struct {
	Result struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
			Cwd       string `json:"cwd"`
			Title     string `json:"title"`
			UpdatedAt string `json:"updatedAt"`
		} `json:"sessions"`
		NextCursor string `json:"nextCursor"`
	} `json:"result"`
}

func list(t *testing.T, c *child, params string) listed {
	t.Helper()
	resp, before := c.call("session/list", params)
	checkFrames(t, "session/list", resp, before)
	var l listed
	require.NoError(t, json.Unmarshal([]byte(resp), &l), resp)
	return l
}

func sessionIDParams(sid string) string { return `{"sessionId":` + acp.JSONQuote(sid) + `}` }

// The session lifecycle across two server processes on one sessions root:
// A lists, closes and resumes; B may not delete what A holds, and may once
// A closed it; resume restores without replaying history.
func TestLifecycleAcrossTwoProcesses(t *testing.T) {
	root, wsA, wsB := t.TempDir(), t.TempDir(), t.TempDir()
	a := startChild(t, root)
	resp, _ := a.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	checkFrames(t, "initialize", resp, nil)
	assert.Contains(t, resp, `"sessionCapabilities":{"list":{},"delete":{},"additionalDirectories":{},"resume":{},"close":{}}`)

	first := newSessionIn(t, a, wsA)
	resp, _ = a.call("session/prompt", acp.PromptParams(first, "first session\nsecond line"))
	require.Contains(t, resp, `"stopReason":"end_turn"`)
	time.Sleep(5 * time.Millisecond)
	second := newSessionIn(t, a, wsB)
	resp, _ = a.call("session/prompt", acp.PromptParams(second, "second session"))
	require.Contains(t, resp, `"stopReason":"end_turn"`)

	l := list(t, a, `{}`)
	require.Len(t, l.Result.Sessions, 2)
	assert.Equal(t, second, l.Result.Sessions[0].SessionID, "most recently updated first")
	assert.Equal(t, "first session", l.Result.Sessions[1].Title)
	for _, s := range l.Result.Sessions {
		_, err := time.Parse(time.RFC3339, s.UpdatedAt)
		assert.NoError(t, err, "updatedAt is ISO 8601: %q", s.UpdatedAt)
	}
	l = list(t, a, `{"cwd":`+acp.JSONQuote(wsA)+`}`)
	require.Len(t, l.Result.Sessions, 1)
	assert.Equal(t, first, l.Result.Sessions[0].SessionID)
	resp, _ = a.call("session/list", `{"cursor":"bogus!"}`)
	assert.Contains(t, resp, `"code":-32602`)

	// B sees A's sessions, but may not delete one A holds.
	b := startChild(t, root)
	assert.Len(t, list(t, b, `{}`).Result.Sessions, 2, "listing needs no ownership")
	resp, before := b.call("session/delete", sessionIDParams(first))
	checkFrames(t, "session/delete", resp, before)
	assert.Regexp(t, `"message":"Invalid params: session `+first+` is open in another process \(pid `+fmt.Sprint(a.pid())+` on host [^ ]+ since [^)]+\); close it there before deleting it"`, resp)
	// A may not delete its own open session either.
	resp, _ = a.call("session/delete", sessionIDParams(first))
	assert.Contains(t, resp, "is open; close it (session/close) before deleting it")

	// A closes it: B may delete it now, and it is gone for both.
	resp, before = a.call("session/close", sessionIDParams(first))
	checkFrames(t, "session/close", resp, before)
	assert.Contains(t, resp, `"result":{}`)
	resp, _ = a.call("session/prompt", acp.PromptParams(first, "after close"))
	assert.Contains(t, resp, "unknown session: "+first, "a closed session is forgotten")
	resp, before = b.call("session/delete", sessionIDParams(first))
	checkFrames(t, "session/delete", resp, before)
	assert.Contains(t, resp, `"result":{}`)
	l = list(t, a, `{}`)
	require.Len(t, l.Result.Sessions, 1)
	assert.Equal(t, second, l.Result.Sessions[0].SessionID)
	resp, _ = b.call("session/delete", sessionIDParams(first))
	assert.Contains(t, resp, `"code":-32002`, "deleting twice: not found")
	resp, _ = b.call("session/load", loadParams(first, wsA))
	assert.Contains(t, resp, `"code":-32002`, "a deleted session cannot be loaded")

	// A closes the second session; B resumes it: no history replayed, and
	// the conversation goes on in B.
	resp, _ = a.call("session/close", sessionIDParams(second))
	assert.Contains(t, resp, `"result":{}`)
	resp, before = b.call("session/resume", loadParams(second, wsB))
	checkFrames(t, "session/resume", resp, before)
	assert.Contains(t, resp, `"result":{`)
	for _, l := range before {
		assert.NotContains(t, l, "second session", "resume replays no history")
		assert.NotContains(t, l, "user_message_chunk")
	}
	resp, _ = b.call("session/prompt", acp.PromptParams(second, "continued in B"))
	require.Contains(t, resp, `"stopReason":"end_turn"`)
	resp, _ = a.call("session/resume", loadParams(second, wsB))
	assert.Contains(t, resp, "is already loaded by another process", "B holds it now")
	resp, _ = b.call("session/resume", loadParams(second, wsB))
	assert.Contains(t, resp, "is already loaded", "resuming a live session twice is refused")
	resp, _ = b.call("session/close", sessionIDParams("no-such-session"))
	assert.Contains(t, resp, "unknown session: no-such-session")
	b.exit()
	a.exit()
}
