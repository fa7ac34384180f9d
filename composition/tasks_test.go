package composition_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A background task that finishes while the session is idle is announced
// to the model in a one-shot injection turn; the next request carries it.
func TestFinishedBackgroundTaskIsAnnounced(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, nil)
	sid := srv.newSession(t, ws).SessionID
	args, _ := json.Marshal(map[string]any{"command": "sleep 0.2; echo done", "description": "wait a bit", "run_in_background": true})
	p.script("start it", toolCall{Name: "bash", Args: string(args)})
	stop, _ := srv.prompt(t, sid, "start it")
	require.Equal(t, "end_turn", stop)

	evs := waitLog(t, root, sid, func(evs []event) bool {
		return slices.ContainsFunc(evs, func(e event) bool { return e.Type == "turn/start" && strings.Contains(string(e.Data), `"injection"`) })
	})
	var notice string
	for _, e := range evs {
		if e.Type == "context/message" {
			notice = string(e.Data)
		}
	}
	require.Contains(t, notice, `background task bash-1 (bash: sleep 0.2; echo done) finished completed. Read its output with task_output.`)
	require.Contains(t, notice, `"source":{"kind":"plugin","plugin":"tool-bash"}`)
	require.Equal(t, []string{"turn/start", "context/message", "turn/end"}, types(evs)[len(types(evs))-3:])

	// The model hears of it on its next request.
	stop, _ = srv.prompt(t, sid, "what happened?")
	require.Equal(t, "end_turn", stop)
	reqs := p.requestsFor(sid)
	last := reqs[len(reqs)-1]
	found := false
	for _, m := range last.Messages {
		for _, b := range m.Content {
			found = found || strings.Contains(b.Text, "finished completed")
		}
	}
	require.True(t, found, "the notice is in the model's history")
}

// "Always allow in this session" on an escalation widens the session's
// sandbox mode, so the next command needs no prompt.
func TestAllowAlwaysWidensTheSession(t *testing.T) {
	root, ws, outside := t.TempDir(), t.TempDir(), t.TempDir()
	p := newProvider()
	var asked []json.RawMessage
	answer := func(method string, params json.RawMessage) any {
		if method != "session/request_permission" {
			return nil
		}
		asked = append(asked, params)
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-always"}}
	}
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, answer)
	sid := srv.newSession(t, ws).SessionID
	first, _ := json.Marshal(map[string]any{"command": "echo one > " + outside + "/one.txt", "description": "write outside",
		"sandbox_permissions": "danger-full-access", "justification": "the user asked for a file outside the project"})
	second, _ := json.Marshal(map[string]any{"command": "echo two > " + outside + "/two.txt", "description": "write outside again"})
	p.script("first", toolCall{Name: "bash", Args: string(first)})
	p.script("second", toolCall{Name: "bash", Args: string(second)})

	stop, _ := srv.prompt(t, sid, "first")
	require.Equal(t, "end_turn", stop)
	require.Len(t, asked, 1)
	require.Contains(t, string(asked[0]), `{"optionId":"allow-always","name":"Always allow, and keep this session at Full access","kind":"allow_always"}`)
	require.FileExists(t, outside+"/one.txt")

	stop, _ = srv.prompt(t, sid, "second")
	require.Equal(t, "end_turn", stop)
	require.Len(t, asked, 1, "no second prompt")
	require.FileExists(t, outside+"/two.txt")

	evs := readLog(t, root, sid)
	require.Contains(t, ofType(evs, "approval/decided")[0], `"outcome":"allowed-always"`)
	require.Equal(t, []string{`{"mode":"danger-full-access"}`}, ofType(evs, "bash/sandbox-mode"))
}
