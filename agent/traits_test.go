package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/capabilities/plan"
	"github.com/dsh-acp/dsh-acp/capabilities/todo"
	"github.com/dsh-acp/dsh-acp/session"
)

// lookTool is a throwaway tool family of one read-only tool: its Traits
// method is the only place that says so. Each call waits (a while at
// most) until a second call is running, so calls that run one after the
// other show as a peak of one.
type lookTool struct {
	mu      *sync.Mutex
	running *int
	peak    *int
	both    chan struct{}
}

func (lookTool) Name() string                 { return "look" }
func (lookTool) Description() string          { return "Look at something." }
func (lookTool) Schema() *capabilities.Schema { return capabilities.Object() }
func (lookTool) Traits() capabilities.Traits  { return capabilities.Traits{ReadOnly: true} }
func (l lookTool) Run(context.Context, *capabilities.Call) (capabilities.Result, error) {
	l.mu.Lock()
	*l.running++
	*l.peak = max(*l.peak, *l.running)
	if *l.running == 2 {
		close(l.both)
	}
	l.mu.Unlock()
	select {
	case <-l.both:
	case <-time.After(5 * time.Second):
	}
	l.mu.Lock()
	*l.running--
	l.mu.Unlock()
	return capabilities.TextResult("looked"), nil
}

// scribbleTool is a throwaway tool that writes a file in the workspace.
type scribbleTool struct{}

func (scribbleTool) Name() string                 { return "scribble" }
func (scribbleTool) Description() string          { return "Write a note." }
func (scribbleTool) Schema() *capabilities.Schema { return capabilities.Object() }
func (scribbleTool) Traits() capabilities.Traits  { return capabilities.Traits{Writes: true} }
func (scribbleTool) Run(_ context.Context, c *capabilities.Call) (capabilities.Result, error) {
	return capabilities.TextResult("wrote"), os.WriteFile(filepath.Join(c.Session.Cwd(), "note.txt"), []byte("hi"), 0o644)
}

func traitsSession(t *testing.T, p llm.Provider, look lookTool) (*Session, string) {
	t.Helper()
	dir := t.TempDir()
	var now int64
	rt := NewRuntime(Config{Model: "m", Provider: p, Clock: func() int64 { now++; return now }, NewID: func() string { return "s-traits" },
		Log: zerolog.Nop(), Modes: []ModeDef{PlanMode()}, ParallelReads: true,
		Tools: func(capabilities.Env) *capabilities.Registry {
			return capabilities.NewRegistry(look, scribbleTool{}, plan.Tool{}, todo.Tool{})
		}})
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: dir})
	require.NoError(t, err)
	return s, dir
}

func newLook() lookTool {
	return lookTool{mu: &sync.Mutex{}, running: new(int), peak: new(int), both: make(chan struct{})}
}

// offeredTools is the tool list of a request, as the provider sends it.
func offeredTools(req *llm.Request) []string {
	var out []string
	for _, tl := range req.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// callOrder is the order of the log's tool/call and tool/result events,
// by call id: what the presenter turns into cards and their updates.
func callOrder(t *testing.T, events []session.Event) string {
	var out []string
	for _, e := range events {
		switch e.Type {
		case session.TypeToolCall:
			var c session.ToolCall
			require.NoError(t, e.Decode(&c))
			out = append(out, "call:"+c.CallID)
		case session.TypeToolResult:
			var r session.ToolResult
			require.NoError(t, e.Decode(&r))
			out = append(out, "result:"+r.CallID)
		}
	}
	return strings.Join(out, " ")
}

func resultText(t *testing.T, events []session.Event, id string) string {
	for _, e := range events {
		var r session.ToolResult
		if e.Type == session.TypeToolResult && e.Decode(&r) == nil && r.CallID == id {
			return r.Content[0].Text
		}
	}
	t.Fatalf("no result for %s", id)
	return ""
}

// A tool family added in one place — its definition's Traits — is treated
// by what it says: in plan mode the read-only tool is offered and its
// consecutive calls run at once, while the writing tool is neither
// offered nor run.
func TestATraitDeclaredInTheToolIsWhatPlanModeAndBatchingRead(t *testing.T) {
	look := newLook()
	step := append(append(append(toolCall(0, "c1", "look", `{}`), toolCall(1, "c2", "look", `{}`)...),
		toolCall(2, "c3", "scribble", `{}`)...), finish(llm.FinishToolCalls))
	p := newScripted([][]llm.Chunk{step, {text(0, "planned"), finish(llm.FinishStop)}})
	s, dir := traitsSession(t, p, look)
	require.NoError(t, s.SetMode(plan.ModeID))
	require.Equal(t, session.EndCompleted, s.Prompt(context.Background(), "plan it").Kind)

	require.Equal(t, []string{plan.ToolName, "look", "todo_write"}, offeredTools(p.Requests()[0]), "plan mode offers the read-only and planning tools")
	ev := s.Log().Events()
	require.Equal(t, 2, *look.peak, "the two read-only calls ran at once")
	require.Equal(t, "call:c1 call:c2 result:c1 result:c2 call:c3 result:c3", callOrder(t, ev))
	require.Contains(t, resultText(t, ev, "c3"), `tool "scribble" is not available in plan mode`)
	_, err := os.Stat(filepath.Join(dir, "note.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "the writing tool did not run in plan mode")
}

// Out of plan mode the writing tool is offered and runs, one call at a
// time, and the plan-only tool is not offered.
func TestAWritingToolIsOfferedAndRunsOutsidePlanMode(t *testing.T) {
	look := newLook()
	step := append(append(append(toolCall(0, "c1", "scribble", `{}`), toolCall(1, "c2", "look", `{}`)...),
		toolCall(2, "c3", "look", `{}`)...), finish(llm.FinishToolCalls))
	p := newScripted([][]llm.Chunk{step, {text(0, "done"), finish(llm.FinishStop)}})
	s, dir := traitsSession(t, p, look)
	require.Equal(t, session.EndCompleted, s.Prompt(context.Background(), "do it").Kind)

	require.Equal(t, []string{"look", "scribble", "todo_write"}, offeredTools(p.Requests()[0]))
	require.Equal(t, "call:c1 result:c1 call:c2 call:c3 result:c2 result:c3", callOrder(t, s.Log().Events()))
	data, err := os.ReadFile(filepath.Join(dir, "note.txt"))
	require.NoError(t, err)
	require.Equal(t, "hi", string(data))
}

// askingGate sends every call to ask, giving no reason.
type askingGate struct{}

func (askingGate) Name() string { return "asking" }
func (askingGate) CheckTool(context.Context, pipeline.Conversation, pipeline.Call) (pipeline.ToolDecision, error) {
	return pipeline.ToolDecision{Verdict: pipeline.ToolAsk}, nil
}

// A question a member asks without a reason says what the call would do,
// as its tool declares it.
func TestAnAskWithoutAReasonIsWordedByTheToolsTraits(t *testing.T) {
	step := append(append(toolCall(0, "c1", "scribble", `{}`), toolCall(1, "c2", "look", `{}`)...), finish(llm.FinishToolCalls))
	p := newScripted([][]llm.Chunk{step, {text(0, "done"), finish(llm.FinishStop)}})
	var now int64
	rt := NewRuntime(Config{Model: "m", Provider: p, Clock: func() int64 { now++; return now }, NewID: func() string { return "s-ask" },
		Log: zerolog.Nop(), Approval: approval.NewService(approval.PolicyNever, func() string { return "a" }),
		Members: func(pipeline.Conversation) []any { return []any{askingGate{}} },
		Tools: func(capabilities.Env) *capabilities.Registry {
			return capabilities.NewRegistry(newLook(), scribbleTool{})
		}})
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, session.EndCompleted, s.Prompt(context.Background(), "go").Kind)
	var reasons []string
	for _, e := range s.Log().Events() {
		if e.Type == session.TypeApprovalAsked {
			var a struct {
				Reason string `json:"reason"`
			}
			require.NoError(t, e.Decode(&a))
			reasons = append(reasons, a.Reason)
		}
	}
	require.Equal(t, []string{"change files with scribble", "read with look"}, reasons)
	_, err = os.Stat(filepath.Join(s.Cwd(), "note.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "the rejected call did not run")
}
