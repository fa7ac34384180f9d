package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/todo"
	"github.com/dsh-acp/dsh-acp/session"
)

// injectingTool injects a context message into its own session while it
// runs, the way a background task finishing during a foreground call does.
type injectingTool struct{ s **Session }

func (injectingTool) Name() string                 { return "slow" }
func (injectingTool) Description() string          { return "runs while something else finishes" }
func (injectingTool) Schema() *capabilities.Schema { return capabilities.Object() }
func (injectingTool) Traits() capabilities.Traits  { return capabilities.Traits{} }
func (t injectingTool) Run(context.Context, *capabilities.Call) (capabilities.Result, error) {
	(*t.s).Inject(session.Source{Kind: "plugin", Plugin: "tool-bash"}, "task t1 finished")
	return capabilities.TextResult("slow done"), nil
}

// roles renders a request's messages as role[:call|result] tokens.
func roles(msgs []llm.Message) string {
	var out []string
	for _, m := range msgs {
		tok := m.Role
		for _, b := range m.Content {
			switch b.Type {
			case session.BlockToolCall:
				tok += ":call"
			case session.BlockToolResult:
				tok += ":result"
			}
		}
		out = append(out, tok)
	}
	return strings.Join(out, " ")
}

func TestInjectionDuringAToolCallWaitsForTheStepBoundary(t *testing.T) {
	p := newScripted([][]llm.Chunk{
		append(append(toolCall(0, "c1", "slow", `{}`), toolCall(1, "c2", "slow", `{}`)...), finish(llm.FinishToolCalls)),
		{text(0, "done"), finish(llm.FinishStop)},
	})
	var s *Session
	var now int64
	rt := NewRuntime(Config{
		Model: "m", Provider: p, Clock: func() int64 { now++; return now }, NewID: func() string { return "s-1" },
		Tools: func(capabilities.Env) *capabilities.Registry { return capabilities.NewRegistry(injectingTool{&s}) },
		Log:   zerolog.Nop(),
	})
	s, _ = rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	require.Equal(t, session.EndReason{Kind: session.EndCompleted}, s.Prompt(context.Background(), "go"))
	// Both notices land after both results, before the next step starts.
	require.Equal(t, "turn/start user/message step/start request/header assistant/message tool/call tool/result tool/call tool/result step/end "+
		"context/message context/message step/start assistant/message step/end turn/end", types(s.Log().Events()))
	require.Len(t, p.Requests(), 2)
	require.Equal(t, "user assistant:call:call user:result user:result user user", roles(p.Requests()[1].Messages))
	msgs, seqs := deriveHistory(s.Log().Events())
	require.NoError(t, checkHistory(msgs, seqs))
}

func TestInjectionInTheLastStepLandsBeforeTurnEnd(t *testing.T) {
	var s *Session
	p := newScripted([][]llm.Chunk{{text(0, "hi"), finish(llm.FinishStop)}})
	var now int64
	rt := NewRuntime(Config{Model: "m", Provider: p, Clock: func() int64 { now++; return now }, NewID: func() string { return "s" }, Log: zerolog.Nop()})
	s, _ = rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	s.mu.Lock()
	s.inTurn = true // as if a turn were open: the notice is queued
	s.mu.Unlock()
	s.Inject(session.Source{Kind: "plugin"}, "late")
	require.Empty(t, s.Log().Events())
	s.mu.Lock()
	s.inTurn = false
	s.mu.Unlock()
	s.Prompt(context.Background(), "x")
	// The queued notice is appended at the first step boundary of the
	// next turn, not lost.
	require.Contains(t, types(s.Log().Events()), "user/message context/message step/start")
}

// ev builds a log event from its type and JSON data.
func ev(t *testing.T, seq int, typ, data string) session.Event {
	t.Helper()
	line := `{"type":"` + typ + `","seq":` + jsonInt(seq) + `,"time":1,"data":` + data + `}`
	var e session.Event
	require.NoError(t, json.Unmarshal([]byte(line), &e))
	return e
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestDerivationRepairsABadlyOrderedLog(t *testing.T) {
	call := `{"turn":1,"step":1,"content":[{"type":"tool-call","id":"c1","name":"bash","arguments":"{}"},{"type":"tool-call","id":"c2","name":"bash","arguments":"{}"}]}`
	events := []session.Event{
		ev(t, 0, session.TypeUserMessage, `{"content":[{"type":"text","text":"go"}],"source":{"kind":"user"}}`),
		ev(t, 1, session.TypeAssistantMessage, call),
		ev(t, 2, session.TypeContextMessage, `{"content":[{"type":"text","text":"task done"}],"source":{"kind":"plugin","plugin":"tool-bash"}}`),
		ev(t, 3, session.TypeToolResult, `{"turn":1,"step":1,"callId":"c1","content":[{"type":"text","text":"ok"}],"isError":false}`),
		ev(t, 4, session.TypeToolResult, `{"turn":1,"step":1,"callId":"zz","content":[{"type":"text","text":"orphan"}],"isError":false}`),
		// c2 never answered (the turn was cancelled), then the user speaks.
		ev(t, 5, session.TypeUserMessage, `{"content":[{"type":"text","text":"again"}],"source":{"kind":"user"}}`),
	}
	// What the old derivation produced is refused by the check, naming the event.
	naive := []llm.Message{{Role: "user"}, {Role: "assistant", Content: []session.Block{{Type: session.BlockToolCall, ID: "c1"}}},
		{Role: "user", Content: []session.Block{session.TextBlock("ctx")}}}
	err := checkHistory(naive, []int{0, 1, 2})
	require.ErrorContains(t, err, "event #2")

	msgs, seqs := deriveHistory(events)
	require.NoError(t, checkHistory(msgs, seqs))
	require.Equal(t, "user assistant:call:call user:result user:result user user", roles(msgs))
	require.Equal(t, []int{0, 1, 3, -1, 2, 5}, seqs)
	require.Equal(t, unansweredResult, msgs[3].Content[0].Content[0].Text)
	require.True(t, *msgs[3].Content[0].IsError)
}

func TestCheckHistoryRefusesInvalidSequences(t *testing.T) {
	call := func(id string) llm.Message {
		return llm.Message{Role: "assistant", Content: []session.Block{{Type: session.BlockToolCall, ID: id}}}
	}
	res := func(id string) llm.Message { return resultMessage(id, nil, false) }
	user := llm.Message{Role: "user", Content: []session.Block{session.TextBlock("u")}}
	for name, tc := range map[string][]llm.Message{
		"orphan result":    {user, res("x")},
		"unanswered":       {user, call("a")},
		"user in between":  {user, call("a"), user, res("a")},
		"assistant before": {user, call("a"), call("b"), res("a"), res("b")},
		"double answer":    {user, call("a"), res("a"), res("a")},
	} {
		seqs := make([]int, len(tc))
		require.Error(t, checkHistory(tc, seqs), name)
	}
	require.NoError(t, checkHistory([]llm.Message{user, call("a"), res("a"), user}, make([]int, 4)))
}

func TestStepCapEndsAnEndlessToolLoop(t *testing.T) {
	todos := `{"todos":[{"content":"a","status":"in_progress"}]}`
	var calls [][]llm.Chunk
	for i := 0; i < 10; i++ {
		calls = append(calls, append(toolCall(0, "c", "todo_write", todos), finish(llm.FinishToolCalls)))
	}
	p := newScripted(calls)
	var now int64
	rt := NewRuntime(Config{Model: "m", Provider: p, Clock: func() int64 { now++; return now }, NewID: func() string { return "s" },
		Tools:    func(capabilities.Env) *capabilities.Registry { return capabilities.NewRegistry(todo.Tool{}) },
		Log:      zerolog.Nop(),
		MaxSteps: 3,
	})
	s, _ := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	r := s.Prompt(context.Background(), "loop")
	require.Equal(t, session.EndError, r.Kind)
	require.Equal(t, CodeStepLimit, r.Code)
	require.Equal(t, 3, r.Step)
	require.Contains(t, r.Message, "3 model calls")
	require.EqualValues(t, 3, p.Calls(), "no model call past the cap")
}

// stubbornTool ignores cancellation for a while, like a command that
// ignores SIGTERM until it is killed.
type stubbornTool struct{ started chan struct{} }

func (stubbornTool) Name() string                 { return "stubborn" }
func (stubbornTool) Description() string          { return "ignores cancel for a while" }
func (stubbornTool) Schema() *capabilities.Schema { return capabilities.Object() }
func (stubbornTool) Traits() capabilities.Traits  { return capabilities.Traits{} }
func (t stubbornTool) Run(context.Context, *capabilities.Call) (capabilities.Result, error) {
	close(t.started)
	time.Sleep(150 * time.Millisecond)
	return capabilities.TextResult("finally"), nil
}

func TestCancelDropsOnlyPromptsQueuedBeforeIt(t *testing.T) {
	p := newScripted([][]llm.Chunk{
		append(toolCall(0, "c1", "stubborn", `{}`), finish(llm.FinishToolCalls)),
		{text(0, "answer to C"), finish(llm.FinishStop)},
	})
	started := make(chan struct{})
	var now int64
	rt := NewRuntime(Config{Model: "m", Provider: p, Clock: func() int64 { now++; return now }, NewID: func() string { return "s" },
		Tools: func(capabilities.Env) *capabilities.Registry { return capabilities.NewRegistry(stubbornTool{started}) },
		Log:   zerolog.Nop()})
	s, _ := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	ends := make([]chan session.EndReason, 3)
	run := func(i int, text string) {
		ends[i] = make(chan session.EndReason, 1)
		go func() { ends[i] <- s.Prompt(context.Background(), text) }()
	}
	waitTickets := func(n int) {
		require.Eventually(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.tickets == n }, 5*time.Second, time.Millisecond)
	}
	run(0, "A")
	<-started
	s.Cancel("session/cancel")
	run(1, "B")
	waitTickets(2)
	s.Cancel("session/cancel")
	run(2, "C")
	waitTickets(3)
	require.Equal(t, session.EndAborted, (<-ends[0]).Kind)
	require.Equal(t, session.EndAborted, (<-ends[1]).Kind)
	require.Equal(t, session.EndReason{Kind: session.EndCompleted}, <-ends[2])
	var prompts []string
	for _, e := range s.Log().Events() {
		if e.Type == session.TypeUserMessage {
			var m session.Message
			require.NoError(t, e.Decode(&m))
			prompts = append(prompts, m.Content[0].Text)
		}
	}
	require.Equal(t, []string{"A", "C"}, prompts, "B was dropped, C reached the model")
	require.Equal(t, "C", p.Requests()[1].Messages[len(p.Requests()[1].Messages)-1].Content[0].Text)
}
