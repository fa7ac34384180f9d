package agent

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/capabilities/todo"
	"github.com/dsh-acp/dsh-acp/session"
)

// chainSession is a test session whose pipeline holds members.
func chainSession(t *testing.T, p llm.Provider, members ...any) *Session {
	t.Helper()
	var now int64
	rt := NewRuntime(Config{
		Model: "m", Provider: p, Clock: func() int64 { now++; return now }, NewID: func() string { return "s-1" },
		Tools:   func(capabilities.Env) *capabilities.Registry { return capabilities.NewRegistry(todo.Tool{}) },
		Log:     zerolog.Nop(),
		Members: func(pipeline.Conversation) []any { return members },
	})
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: "/work/project"})
	require.NoError(t, err)
	return s
}

// testMember plays one part on every chain.
type testMember struct {
	prompt   pipeline.PromptDecision
	tool     pipeline.ToolDecision
	result   pipeline.ResultDecision
	forceOne bool // force one continuation, then keep the default
	panicAt  string
	forced   bool
	seen     []pipeline.Result
}

func (m *testMember) SubmitPrompt(context.Context, pipeline.Conversation, pipeline.Prompt) (pipeline.PromptDecision, error) {
	if m.panicAt == "prompt" {
		panic("prompt member broke")
	}
	return m.prompt, nil
}

func (m *testMember) CheckTool(context.Context, pipeline.Conversation, pipeline.Call) (pipeline.ToolDecision, error) {
	if m.panicAt == "tool" {
		panic("gate broke")
	}
	return m.tool, nil
}

func (m *testMember) ReviewResult(_ context.Context, s pipeline.Conversation, _ pipeline.Call, r pipeline.Result) (pipeline.ResultDecision, error) {
	m.seen = append(m.seen, r)
	r.Content[0].Text = "mutated by the member"
	s.Log().Append("test/reviewed", struct{}{})
	return m.result, nil
}

func (m *testMember) DecideContinuation(_ context.Context, _ pipeline.Conversation, st pipeline.StepEnd) (pipeline.ContinueDecision, error) {
	if m.forceOne && !m.forced && !st.Final {
		m.forced = true
		return pipeline.ContinueDecision{Verdict: pipeline.ContinueForce, Steering: &pipeline.Context{
			Source: session.Source{Kind: "plugin", Plugin: "test"}, Content: []session.Block{session.TextBlock("say more")}}}, nil
	}
	return pipeline.ContinueDecision{}, nil
}

func resultOf(t *testing.T, s *Session) session.ToolResult {
	t.Helper()
	for _, e := range s.Log().Events() {
		if e.Type == session.TypeToolResult {
			var r session.ToolResult
			require.NoError(t, e.Decode(&r))
			return r
		}
	}
	t.Fatal("no tool/result")
	return session.ToolResult{}
}

const oneTodo = `{"todos":[{"content":"a","status":"pending"}]}`

func toolThenText() *scripted {
	return newScripted([][]llm.Chunk{
		append(toolCall(0, "c1", "todo_write", oneTodo), finish(llm.FinishToolCalls)),
		{text(0, "done"), finish(llm.FinishStop)},
	})
}

func TestABlockedPromptRejectsTheTurn(t *testing.T) {
	m := &testMember{prompt: pipeline.PromptDecision{Block: true, Reason: "not today"}}
	p := newScripted(nil)
	s := chainSession(t, p, m)
	r := s.Prompt(context.Background(), "delete it all")
	require.Equal(t, session.EndReason{Kind: session.EndRejected, Reason: "not today"}, r)
	require.Equal(t, "turn/start prompt/blocked turn/end", types(s.Log().Events()))
	require.Empty(t, p.Requests(), "no model call")
	raw, _ := s.Log().Events()[1].MarshalJSON()
	require.Contains(t, string(raw), `"data":{"content":[{"type":"text","text":"delete it all"}],"source":{"kind":"user"},"reason":"not today"}`)
}

func TestPromptContextFollowsTheUserMessage(t *testing.T) {
	m := &testMember{prompt: pipeline.PromptDecision{Context: &pipeline.Context{
		Source: session.Source{Kind: "plugin", Plugin: "hooks-claude"}, Content: []session.Block{session.TextBlock("teal")}}}}
	p := newScripted([][]llm.Chunk{{text(0, "teal"), finish(llm.FinishStop)}})
	s := chainSession(t, p, m)
	s.Prompt(context.Background(), "favorite color?")
	require.Equal(t, "turn/start user/message context/message step/start request/header assistant/message step/end turn/end", types(s.Log().Events()))
	require.Len(t, p.Requests()[0].Messages, 2, "the model sees the context")
}

func TestADeniedCallIsAnErrorResultAndStillReviewed(t *testing.T) {
	m := &testMember{tool: pipeline.ToolDecision{Verdict: pipeline.ToolDeny, Reason: "bash is disabled"}}
	s := chainSession(t, toolThenText(), m)
	s.Prompt(context.Background(), "go")
	r := resultOf(t, s)
	require.Equal(t, "Error: bash is disabled", r.Content[0].Text)
	require.True(t, r.IsError)
	require.Nil(t, r.Error)
	require.NotContains(t, types(s.Log().Events()), "todo/write", "the tool did not run")
	require.Len(t, m.seen, 1, "post-execute sees denied calls too")
}

func TestAskWithoutApprovalServiceDenies(t *testing.T) {
	m := &testMember{tool: pipeline.ToolDecision{Verdict: pipeline.ToolAsk, Reason: "bash requires manual approval in this session"}}
	s := chainSession(t, toolThenText(), m)
	s.Prompt(context.Background(), "go")
	require.Equal(t, "Error: bash requires manual approval in this session", resultOf(t, s).Content[0].Text)

	m2 := &testMember{tool: pipeline.ToolDecision{Verdict: pipeline.ToolAsk}}
	s2 := chainSession(t, toolThenText(), m2)
	s2.Prompt(context.Background(), "go")
	require.Equal(t, `Error: tool "todo_write" requires approval (not yet supported)`, resultOf(t, s2).Content[0].Text)
}

func TestAMemberMutatingTheResultChangesNothingButItsBlockDoes(t *testing.T) {
	m := &testMember{}
	s := chainSession(t, toolThenText(), m)
	s.Prompt(context.Background(), "go")
	r := resultOf(t, s)
	require.Equal(t, "Updated todo list: 1 pending, 0 in progress, 0 completed.", r.Content[0].Text)
	require.False(t, r.IsError)
	// Its own events land between tool/call and tool/result.
	require.Contains(t, types(s.Log().Events()), "tool/call todo/write test/reviewed tool/result step/end")

	blocker := &testMember{result: pipeline.ResultDecision{Block: true, Feedback: "rerun with a summary",
		Context: &pipeline.Context{Source: session.Source{Kind: "plugin", Plugin: "p"}, Content: []session.Block{session.TextBlock("audit")}}}}
	s2 := chainSession(t, toolThenText(), blocker)
	s2.Prompt(context.Background(), "go")
	r2 := resultOf(t, s2)
	require.Equal(t, []session.Block{session.TextBlock("rerun with a summary")}, r2.Content)
	require.True(t, r2.IsError)
	require.Contains(t, types(s2.Log().Events()), "tool/result context/message step/end", "the context follows the step's last result")
}

func TestAForcedContinuationSteersTheNextStep(t *testing.T) {
	m := &testMember{forceOne: true}
	p := newScripted([][]llm.Chunk{{text(0, "FIRST"), finish(llm.FinishStop)}, {text(0, "SECOND"), finish(llm.FinishStop)}})
	s := chainSession(t, p, m)
	require.Equal(t, session.EndCompleted, s.Prompt(context.Background(), "one word").Kind)
	require.Equal(t, "turn/start user/message step/start request/header assistant/message step/end "+
		"steering/message step/start assistant/message step/end turn/end", types(s.Log().Events()))
	var st steeringMessage
	for _, e := range s.Log().Events() {
		if e.Type == session.TypeSteeringMessage {
			require.NoError(t, e.Decode(&st))
			raw, _ := e.MarshalJSON()
			require.Contains(t, string(raw), `"data":{"turn":1,"content":[{"type":"text","text":"say more"}],"source":{"kind":"plugin","plugin":"test"}}`)
		}
	}
	require.Len(t, p.Requests()[1].Messages, 3, "the steering reaches the model")
}

func TestAPanickingGateKeepsTheToolFromRunningAndTheTurnAlive(t *testing.T) {
	m := &testMember{panicAt: "tool"}
	s := chainSession(t, toolThenText(), m)
	r := s.Prompt(context.Background(), "go")
	require.Equal(t, session.EndCompleted, r.Kind, "the turn goes on")
	res := resultOf(t, s)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].Text, `tool "todo_write" was not run`)
	require.NotContains(t, types(s.Log().Events()), "todo/write")

	m2 := &testMember{panicAt: "prompt"}
	s2 := chainSession(t, newScripted([][]llm.Chunk{{text(0, "hi"), finish(llm.FinishStop)}}), m2)
	require.Equal(t, session.EndCompleted, s2.Prompt(context.Background(), "hello").Kind, "a broken prompt member never vetoes the prompt")
}
