package pipeline

import (
	"bytes"
	"context"
	"errors"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
)

type fakeSession struct{ log *session.Log }

func (f fakeSession) ID() string        { return "s" }
func (f fakeSession) Cwd() string       { return "/w" }
func (f fakeSession) Log() *session.Log { return f.log }

func (f fakeSession) Host() *capabilities.Host { return nil }

func newFake() fakeSession {
	return fakeSession{log: session.NewLog(session.Header{ID: "s"}, func() int64 { return 0 }, nil)}
}

func src(p string) session.Source { return session.Source{Kind: "plugin", Plugin: p} }

func ctxOf(p, text string) *Context {
	return &Context{Source: src(p), Content: []session.Block{session.TextBlock(text)}}
}

// member is a configurable member of every chain; calls records the order.
type member struct {
	name   string
	calls  *[]string
	prompt PromptDecision
	tool   ToolDecision
	result ResultDecision
	cont   ContinueDecision
	notes  []Context
	err    error
	panics bool
	mutate bool
}

func (m *member) Name() string { return m.name }

func (m *member) enter() error {
	*m.calls = append(*m.calls, m.name)
	if m.panics {
		panic("boom in " + m.name)
	}
	return m.err
}

func (m *member) SubmitPrompt(_ context.Context, _ Conversation, p Prompt) (PromptDecision, error) {
	if m.mutate {
		p.Content[0].Text = "rewritten"
	}
	return m.prompt, m.enter()
}

func (m *member) PrepareStep(context.Context, Conversation, Step) (StepDecision, error) {
	return StepDecision{Notices: m.notes}, m.enter()
}

func (m *member) CheckTool(_ context.Context, _ Conversation, c Call) (ToolDecision, error) {
	if m.mutate && len(c.Args) > 0 {
		c.Args[0] = 'X'
	}
	return m.tool, m.enter()
}

func (m *member) ReviewResult(_ context.Context, _ Conversation, _ Call, r Result) (ResultDecision, error) {
	if m.mutate {
		r.Content[0].Text = "tampered"
		r.IsError = !r.IsError
		r.Error.Code = "TAMPERED"
	}
	return m.result, m.enter()
}

func (m *member) DecideContinuation(context.Context, Conversation, StepEnd) (ContinueDecision, error) {
	return m.cont, m.enter()
}

func TestNewRejectsAMemberOfNoChain(t *testing.T) {
	_, err := New(zerolog.Nop(), struct{}{})
	require.ErrorContains(t, err, "joins no chain")
}

func TestPromptChainMergesContextsAndStopsAtTheFirstBlock(t *testing.T) {
	var calls []string
	a := &member{name: "a", calls: &calls, prompt: PromptDecision{Context: ctxOf("a", "from a")}}
	b := &member{name: "b", calls: &calls, prompt: PromptDecision{Context: ctxOf("b", "from b")}}
	p, err := New(zerolog.Nop(), a, b)
	require.NoError(t, err)
	d := p.SubmitPrompt(context.Background(), newFake(), Prompt{Turn: 1, Content: []session.Block{session.TextBlock("hi")}})
	require.False(t, d.Block)
	require.Equal(t, &Context{Source: src("a"), Content: []session.Block{session.TextBlock("from a"), session.TextBlock("from b")}}, d.Context)
	require.Equal(t, []string{"a", "b"}, calls)

	calls = nil
	a.prompt = PromptDecision{Block: true, Reason: "no"}
	d = p.SubmitPrompt(context.Background(), newFake(), Prompt{Content: []session.Block{session.TextBlock("hi")}})
	require.Equal(t, PromptDecision{Block: true, Reason: "no"}, d)
	require.Equal(t, []string{"a"}, calls, "a block answers without calling the rest of the chain")
}

func TestPromptMemberMutatingItsInputChangesNothing(t *testing.T) {
	var calls []string
	var seen []string
	mut := &member{name: "mut", calls: &calls, mutate: true}
	spy := spyPrompt{seen: &seen}
	p, err := New(zerolog.Nop(), mut, spy)
	require.NoError(t, err)
	content := []session.Block{session.TextBlock("original")}
	p.SubmitPrompt(context.Background(), newFake(), Prompt{Content: content})
	require.Equal(t, "original", content[0].Text)
	require.Equal(t, []string{"original"}, seen, "the next member sees the prompt as the loop handed it")
}

type spyPrompt struct{ seen *[]string }

func (s spyPrompt) SubmitPrompt(_ context.Context, _ Conversation, p Prompt) (PromptDecision, error) {
	*s.seen = append(*s.seen, p.Text())
	return PromptDecision{}, nil
}

func TestResultMemberMutatingTheResultItIsHandedHasNoEffect(t *testing.T) {
	var calls []string
	mut := &member{name: "mut", calls: &calls, mutate: true}
	var got []Result
	spy := spyResult{got: &got}
	p, err := New(zerolog.Nop(), mut, spy)
	require.NoError(t, err)
	r := Result{Content: []session.Block{session.TextBlock("HELLO\n")}, IsError: false, Error: &session.ErrorInfo{Name: "E", Code: "C"}}
	d := p.ReviewResult(context.Background(), newFake(), Call{CallID: "c1", Name: "bash"}, r)
	require.Equal(t, ResultDecision{}, d, "a mutation is not a decision")
	require.Equal(t, "HELLO\n", r.Content[0].Text)
	require.False(t, r.IsError)
	require.Equal(t, "C", r.Error.Code)
	require.Len(t, got, 1)
	require.Equal(t, "HELLO\n", got[0].Text(), "the next member sees the untouched snapshot")
	require.False(t, got[0].IsError)
	require.Equal(t, "C", got[0].Error.Code)
}

type spyResult struct{ got *[]Result }

func (s spyResult) ReviewResult(_ context.Context, _ Conversation, _ Call, r Result) (ResultDecision, error) {
	*s.got = append(*s.got, r)
	return ResultDecision{}, nil
}

func TestResultChainBlockKeepsEarlierContexts(t *testing.T) {
	var calls []string
	guard := &member{name: "guard", calls: &calls, result: ResultDecision{Context: ctxOf("repeat-tool-guard", "stop repeating")}}
	hook := &member{name: "hook", calls: &calls, result: ResultDecision{Block: true, Feedback: "rejected", Context: ctxOf("hooks-claude", "audit")}}
	late := &member{name: "late", calls: &calls, result: ResultDecision{Context: ctxOf("late", "never")}}
	p, err := New(zerolog.Nop(), guard, hook, late)
	require.NoError(t, err)
	d := p.ReviewResult(context.Background(), newFake(), Call{}, Result{Content: []session.Block{session.TextBlock("x")}})
	require.True(t, d.Block)
	require.Equal(t, "rejected", d.Feedback)
	require.Equal(t, &Context{Source: src("repeat-tool-guard"), Content: []session.Block{session.TextBlock("stop repeating"), session.TextBlock("audit")}}, d.Context)
	require.Equal(t, []string{"guard", "hook"}, calls)
}

func TestAPanickingMemberIsContained(t *testing.T) {
	var logged bytes.Buffer
	var calls []string
	bad := &member{name: "bad", calls: &calls, panics: true}
	next := &member{name: "next", calls: &calls, prompt: PromptDecision{Context: ctxOf("next", "still here")},
		cont: ContinueDecision{Verdict: ContinueForce, Steering: ctxOf("next", "go on")}}
	p, err := New(zerolog.New(&logged), bad, next)
	require.NoError(t, err)
	s := newFake()
	ctx := context.Background()

	d := p.SubmitPrompt(ctx, s, Prompt{Content: []session.Block{session.TextBlock("hi")}})
	require.False(t, d.Block, "prompt submit fails safe by passing")
	require.Equal(t, "still here", d.Context.Content[0].Text)

	require.Empty(t, p.PrepareStep(ctx, s, Step{Turn: 1, Step: 1}))

	td := p.CheckTool(ctx, s, Call{Name: "bash"})
	require.Equal(t, ToolDeny, td.Verdict, "a gate that breaks keeps the tool from running")
	require.Equal(t, `tool "bash" was not run: the bad check failed`, td.Reason)

	rd := p.ReviewResult(ctx, s, Call{}, Result{Content: []session.Block{session.TextBlock("r")}})
	require.False(t, rd.Block)

	cd := p.DecideContinuation(ctx, s, StepEnd{Continue: false})
	require.Equal(t, ContinueForce, cd.Verdict, "the chain goes on after the contained member")
	require.Contains(t, logged.String(), "boom in bad")
	require.Contains(t, logged.String(), "pipeline member panicked")
}

func TestAnErroringMemberYieldsTheFailSafe(t *testing.T) {
	var logged bytes.Buffer
	var calls []string
	bad := &member{name: "bad", calls: &calls, err: errors.New("config vanished"),
		prompt: PromptDecision{Block: true, Reason: "would block"}, tool: ToolDecision{Verdict: ToolPass},
		result: ResultDecision{Block: true, Feedback: "would block"}, cont: ContinueDecision{Verdict: ContinueStop}}
	p, err := New(zerolog.New(&logged), bad)
	require.NoError(t, err)
	s := newFake()
	ctx := context.Background()
	require.False(t, p.SubmitPrompt(ctx, s, Prompt{}).Block)
	require.Equal(t, ToolDeny, p.CheckTool(ctx, s, Call{Name: "read"}).Verdict)
	require.False(t, p.ReviewResult(ctx, s, Call{}, Result{}).Block)
	require.Equal(t, ContinueDefault, p.DecideContinuation(ctx, s, StepEnd{}).Verdict)
	require.Contains(t, logged.String(), "config vanished")
}

func TestToolChainFirstDenyOrAskDecides(t *testing.T) {
	var calls []string
	pass := &member{name: "pass", calls: &calls}
	ask := &member{name: "ask", calls: &calls, tool: ToolDecision{Verdict: ToolAsk, Reason: "manual"}}
	deny := &member{name: "deny", calls: &calls, tool: ToolDecision{Verdict: ToolDeny, Reason: "no"}}
	p, err := New(zerolog.Nop(), pass, ask, deny)
	require.NoError(t, err)
	d := p.CheckTool(context.Background(), newFake(), Call{Name: "bash", Args: []byte(`{"a":1}`)})
	require.Equal(t, ToolDecision{Verdict: ToolAsk, Reason: "manual"}, d)
	require.Equal(t, []string{"pass", "ask"}, calls)
}

func TestToolMemberMutatingArgsHasNoEffect(t *testing.T) {
	var calls []string
	mut := &member{name: "mut", calls: &calls, mutate: true}
	p, err := New(zerolog.Nop(), mut)
	require.NoError(t, err)
	args := []byte(`{"command":"ls"}`)
	p.CheckTool(context.Background(), newFake(), Call{Args: args})
	require.Equal(t, `{"command":"ls"}`, string(args))
}

func TestContinuationChainAndNotices(t *testing.T) {
	var calls []string
	a := &member{name: "a", calls: &calls, notes: []Context{*ctxOf("a", "one"), {Source: src("a")}}}
	b := &member{name: "b", calls: &calls, notes: []Context{*ctxOf("b", "two")}, cont: ContinueDecision{Verdict: ContinueStop}}
	c := &member{name: "c", calls: &calls, cont: ContinueDecision{Verdict: ContinueForce}}
	p, err := New(zerolog.Nop(), a, b, c)
	require.NoError(t, err)
	notes := p.PrepareStep(context.Background(), newFake(), Step{})
	require.Len(t, notes, 2, "empty notices are dropped")
	require.Equal(t, "one", notes[0].Content[0].Text)
	require.Equal(t, "two", notes[1].Content[0].Text)
	calls = nil
	require.Equal(t, ContinueStop, p.DecideContinuation(context.Background(), newFake(), StepEnd{Continue: true}).Verdict)
	require.Equal(t, []string{"a", "b"}, calls)
}
