package agent

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/todo"
	"github.com/dsh-acp/dsh-acp/session"
)

// scripted is the agent tests' use of the one scripted model (llmtest):
// one list of chunks per model call; a nil list streams "partial", closes
// started and holds until the call is cancelled.
type scripted struct {
	*llmtest.Model
	started chan struct{}
}

// newScripted serves calls in order; a call past the last fails.
func newScripted(calls [][]llm.Chunk) *scripted {
	s := &scripted{started: make(chan struct{})}
	var once sync.Once
	steps := make([]llmtest.Step, len(calls))
	for i, c := range calls {
		if c != nil {
			steps[i] = llmtest.Step{Chunks: c}
			continue
		}
		steps[i] = llmtest.Step{Hold: true, Seq: func(yield func(llm.Chunk) bool) {
			if yield(text(0, "partial")) {
				once.Do(func() { close(s.started) })
			}
		}}
	}
	s.Model = llmtest.Script(steps...)
	return s
}

// newHolding is a model whose one call holds until cancelled.
func newHolding() *scripted { return newScripted([][]llm.Chunk{nil}) }

func text(i int, s string) llm.Chunk { return llm.Chunk{Type: llm.ChunkTextDelta, Index: i, Text: s} }

func finish(kind llm.FinishKind) llm.Chunk {
	return llm.Chunk{Type: llm.ChunkFinish, Reason: &llm.FinishReason{Kind: kind}}
}

func toolCall(i int, id, name, args string) []llm.Chunk {
	n := name
	b := session.Block{Type: session.BlockToolCall, ID: id, Name: name, Arguments: args}
	return []llm.Chunk{
		{Type: llm.ChunkBlockStart, Index: i, BlockType: "tool-call"},
		{Type: llm.ChunkToolCallDelta, Index: i, ID: id, Name: &n, ArgumentsDelta: args},
		{Type: llm.ChunkBlockEnd, Index: i, Block: &b},
	}
}

func newTestSession(t *testing.T, p llm.Provider) *Session {
	t.Helper()
	var now int64
	rt := NewRuntime(Config{
		Model: "m", Provider: p, Clock: func() int64 { now++; return now }, NewID: func() string { return "s-1" },
		Tools:    func(capabilities.Env) *capabilities.Registry { return capabilities.NewRegistry(todo.Tool{}) },
		Sections: []Section{{Name: "persona", Text: "Work in {{cwd}} with {{model}}."}},
		Log:      zerolog.Nop(),
	})
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: "/work/project"})
	require.NoError(t, err)
	return s
}

func types(events []session.Event) string {
	var out []string
	for _, e := range events {
		if e.Type != session.TypeAssistantChunk {
			out = append(out, e.Type)
		}
	}
	return strings.Join(out, " ")
}

func TestToolTurnRunsToolsAndContinues(t *testing.T) {
	todos := `{"todos":[{"content":"a","status":"in_progress"}]}`
	p := newScripted([][]llm.Chunk{
		append(append(toolCall(0, "c1", "todo_write", todos), toolCall(1, "c2", "nope", `{}`)...), finish(llm.FinishToolCalls)),
		{text(0, "done"), finish(llm.FinishStop)},
	})
	s := newTestSession(t, p)
	r := s.Prompt(context.Background(), "plan it")
	require.Equal(t, session.EndReason{Kind: session.EndCompleted}, r)
	ev := s.Log().Events()
	require.Equal(t, "turn/start user/message step/start request/header assistant/message tool/call todo/write tool/result tool/call tool/result step/end "+
		"step/start assistant/message step/end turn/end", types(ev))
	var res session.ToolResult
	for _, e := range ev {
		if e.Type == session.TypeToolResult {
			require.NoError(t, e.Decode(&res))
		}
	}
	require.Equal(t, "c2", res.CallID)
	require.True(t, res.IsError)
	require.Equal(t, `Error: unknown tool "nope"`, res.Content[0].Text)
	require.Equal(t, &session.ErrorInfo{Name: "ToolNotFoundError", Code: "UNKNOWN_TOOL"}, res.Error)
	// The second request carries the history: user, assistant with both
	// calls, and the two results.
	require.Len(t, p.Requests(), 2)
	require.Len(t, p.Requests()[1].Messages, 4)
	require.Equal(t, "Work in /work/project with m.", strings.Split(p.Requests()[0].System, "\n\n")[1])
}

func TestFinishErrorEndsTurnWithError(t *testing.T) {
	p := newScripted([][]llm.Chunk{{text(0, "x"), {Type: llm.ChunkFinish, Reason: &llm.FinishReason{Kind: llm.FinishError, Message: "model stopped: content_filter", Code: "CONTENT_FILTER"}}}})
	s := newTestSession(t, p)
	r := s.Prompt(context.Background(), "hi")
	require.Equal(t, session.EndReason{Kind: session.EndError, Step: 1, Message: "model stopped: content_filter", Code: "CONTENT_FILTER"}, r)
	require.Equal(t, "turn/start user/message step/start request/header step/end turn/end", types(s.Log().Events()))
}

func TestAbortedFinishWithoutCancelIsAnError(t *testing.T) {
	p := newScripted([][]llm.Chunk{{finish(llm.FinishAborted)}})
	r := newTestSession(t, p).Prompt(context.Background(), "hi")
	require.Equal(t, session.EndReason{Kind: session.EndError, Step: 1, Message: "model stream aborted", Code: "ABORTED"}, r)
}

func TestMaxTokensDropsToolCalls(t *testing.T) {
	p := newScripted([][]llm.Chunk{append(append([]llm.Chunk{text(0, "long")}, toolCall(1, "c1", "todo_write", `{"todos":[]}`)...), finish(llm.FinishMaxTokens))})
	s := newTestSession(t, p)
	require.Equal(t, session.EndReason{Kind: session.EndMaxTokens}, s.Prompt(context.Background(), "hi"))
	require.Equal(t, "turn/start user/message step/start request/header assistant/message step/end turn/end", types(s.Log().Events()))
}

func TestCancelAbortsStreamPromptly(t *testing.T) {
	p := newHolding()
	s := newTestSession(t, p)
	done := make(chan session.EndReason, 1)
	go func() { done <- s.Prompt(context.Background(), "long") }()
	<-p.started
	start := time.Now()
	s.Cancel("session/cancel")
	select {
	case r := <-done:
		require.Equal(t, session.EndReason{Kind: session.EndAborted, Reason: "session/cancel"}, r)
		require.Less(t, time.Since(start), 2*time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not end the turn")
	}
	require.Equal(t, "turn/start user/message step/start request/header step/end turn/end", types(s.Log().Events()))
}

func TestCloseDisposesRunningTurn(t *testing.T) {
	p := newHolding()
	s := newTestSession(t, p)
	done := make(chan session.EndReason, 1)
	go func() { done <- s.Prompt(context.Background(), "long") }()
	<-p.started
	require.NoError(t, s.Close(context.Background()))
	require.Equal(t, session.EndReason{Kind: session.EndDisposed}, <-done)
	require.Equal(t, session.EndReason{Kind: session.EndDisposed}, s.Prompt(context.Background(), "after close"))
}

func TestSecondTurnLogsNoHeaderWhenUnchanged(t *testing.T) {
	p := newScripted([][]llm.Chunk{{text(0, "a"), finish(llm.FinishStop)}, {text(0, "b"), finish(llm.FinishStop)}})
	s := newTestSession(t, p)
	s.Prompt(context.Background(), "one")
	s.Prompt(context.Background(), "two")
	n := 0
	for _, e := range s.Log().Events() {
		if strings.HasPrefix(e.Type, "request/header") {
			n++
		}
	}
	require.Equal(t, 1, n)
}

func TestHeaderDeltaAndFallback(t *testing.T) {
	schema := func(name string) llm.ToolSchema {
		return llm.ToolSchema{Name: name, Description: name, Parameters: json.RawMessage(`{"type":"object"}`)}
	}
	base := Header{Config: llm.Config{Model: "m"}, System: strings.Repeat("line\n", 10) + "end", Tools: []llm.ToolSchema{schema("a"), schema("c")}}
	log := session.NewLog(session.Header{ID: "x"}, func() int64 { return 0 }, nil)
	log.Append(session.TypeRequestHeader, headerEvent{Header: base, Reason: "initial"})

	prev, found := foldHeader(log.Events())
	grown := base
	grown.System = base.System + "\n\nAsk before risky commands."
	typ, data := headerEventFor(prev, found, grown, false)
	require.Equal(t, session.TypeRequestHeaderDelta, typ)
	require.JSONEq(t, `{"system":{"keepStart":11,"keepEnd":0,"insert":["","Ask before risky commands."]}}`, string(session.Data(data)))

	reordered := base
	reordered.Tools = []llm.ToolSchema{schema("a"), schema("b"), schema("c")}
	typ, data = headerEventFor(prev, found, reordered, false)
	require.Equal(t, session.TypeRequestHeader, typ)
	require.Equal(t, "fallback", data.(headerEvent).Reason)

	typ, _ = headerEventFor(prev, found, base, false)
	require.Equal(t, "", typ)
	typ, data = headerEventFor(prev, found, base, true)
	require.Equal(t, session.TypeRequestHeader, typ)
	require.Equal(t, "resume", data.(headerEvent).Reason)
}

func TestDeriveMessagesWrapsContext(t *testing.T) {
	log := session.NewLog(session.Header{ID: "x"}, func() int64 { return 0 }, nil)
	log.Append(session.TypeUserMessage, session.Message{Content: []session.Block{session.TextBlock("hi")}, Source: session.UserSource})
	log.Append(session.TypeContextMessage, session.Message{Content: []session.Block{session.TextBlock("note")}, Source: session.Source{Kind: "plugin", Plugin: "p"}})
	msgs := deriveMessages(log.Events())
	require.Len(t, msgs, 2)
	require.Equal(t, []session.Block{session.TextBlock(`<context source="plugin">`), session.TextBlock("note"), session.TextBlock("</context>")}, msgs[1].Content)
}
