package agent

import (
	"context"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

// watcher records the children it sees and hands each one context.
type watcher struct {
	mu             sync.Mutex
	started, ended []string
}

func (w *watcher) StartSubagent(_ context.Context, child pipeline.Conversation) (*pipeline.Context, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = append(w.started, child.ID())
	return &pipeline.Context{Source: session.Source{Kind: "plugin", Plugin: "hooks-claude"},
		Content: []session.Block{session.TextBlock("child, be brief")}}, nil
}

func (w *watcher) StopSubagent(_ context.Context, child pipeline.Conversation) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended = append(w.ended, child.ID())
	return nil
}

func TestSubagentWatchersSeeEveryChildStartAndEnd(t *testing.T) {
	p := newScripted([][]llm.Chunk{{text(0, "done"), finish(llm.FinishStop)}})
	w := &watcher{}
	ids := []string{"parent", "child"}
	var now int64
	rt := NewRuntime(Config{Model: "m", Provider: p, Clock: func() int64 { now++; return now },
		NewID:   func() string { id := ids[0]; ids = ids[1:]; return id },
		Log:     zerolog.Nop(),
		Members: func(pipeline.Conversation) []any { return []any{w} },
	})
	parent, err := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	require.NoError(t, err)
	child, err := parent.Spawn(context.Background(), capabilities.ChildOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"child"}, w.started)
	require.Equal(t, session.EndCompleted, child.Prompt(context.Background(), "go").Kind)
	// The start context reached the child before its first prompt, and
	// the model saw it.
	require.Contains(t, types(child.Log().Events()), "context/message turn/end turn/start user/message")
	var seen bool
	for _, m := range p.Requests()[0].Messages {
		for _, b := range m.Content {
			seen = seen || b.Text == "child, be brief"
		}
	}
	require.True(t, seen, "the child's model request carries the SubagentStart context")
	require.Empty(t, w.ended)
	require.NoError(t, child.Close(context.Background()))
	require.Equal(t, []string{"child"}, w.ended)
}
