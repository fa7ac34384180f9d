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
