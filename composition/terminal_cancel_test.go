package composition_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
)

// A turn cancelled while the editor is still creating its terminal: the
// terminal the editor creates afterwards is killed and released, never
// left running in the editor.
func TestTerminalCreatedAfterTheCancelIsFreed(t *testing.T) {
	project := t.TempDir()
	p := newProvider()
	creating := make(chan struct{})
	answerCreate := make(chan struct{})
	var mu sync.Mutex
	var freed []string
	record := func(ctx context.Context, req acpclient.Request) (any, error) {
		var r struct {
			TerminalID string `json:"terminalId"`
		}
		_ = json.Unmarshal(req.Params, &r)
		mu.Lock()
		freed = append(freed, req.Method+" "+r.TerminalID)
		mu.Unlock()
		return struct{}{}, nil
	}
	handlers := map[string]acpclient.Handler{
		"terminal/create": func(ctx context.Context, req acpclient.Request) (any, error) {
			close(creating)
			return acpclient.Deferred(func() (any, error) {
				<-answerCreate
				return map[string]string{"terminalId": "late-1"}, nil
			}), nil
		},
		"terminal/kill":    record,
		"terminal/release": record,
	}
	s := serveClient(t, "default", openStore(t, t.TempDir()), project, p,
		acpclient.Options{Handlers: handlers, ClientCapabilities: map[string]any{"terminal": true}}, nil)
	sid := s.newSession(t, project).SessionID
	args, _ := json.Marshal(map[string]string{"command": "sleep 30", "description": "wait"})
	p.script("run it", toolCall{Name: "bash", Args: string(args)})

	_, answered := s.c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]string{{"type": "text", "text": "run it"}}})
	select {
	case <-creating:
	case <-time.After(waitFor):
		t.Fatal("no terminal/create")
	}
	s.c.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]string{"sessionId": sid}})
	f := s.c.await(answered, "session/prompt")
	require.JSONEq(t, `{"stopReason":"cancelled"}`, string(f.Result))

	close(answerCreate) // the editor finishes creating the terminal only now
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(freed) == 2
	}, waitFor, 5*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"terminal/kill late-1", "terminal/release late-1"}, freed)
}
