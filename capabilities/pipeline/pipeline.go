// Package pipeline is the turn pipeline's vocabulary: the five ordered
// chains a composition registers members into, their typed decisions, and
// the runner that keeps every member contained.
//
// One turn passes the chains in this order (session-log contract § 3):
//
//	prompt submit  per drained prompt: block it with a reason, or add context
//	pre step       before each model call: notices for the model
//	pre execute    per tool call: pass, deny with a reason, or ask for approval
//	post execute   per tool result (denied and failed calls too): block it
//	               with feedback, or add context
//	continuation   after each step/end: keep the default, stop, or continue
//	               with a steering reason
//
// A member implements one or more of [PromptSubmitter], [StepPreparer],
// [ToolGate], [ResultReviewer] and [Continuer] (and [SessionStarter] for the
// detached session-start point). Members run in registration order. A
// member that returns an error or panics is logged and replaced by its
// chain's fail-safe decision: it never ends the turn or the process. Every
// member sees its own copy of what the loop hands it, so a member that
// mutates its input changes nothing; only the typed decision counts.
package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// Conversation is what a member may use of the conversation (the agent
// session) it runs for.
type Conversation interface {
	// ID is the session id.
	ID() string
	// Cwd is the session's working directory.
	Cwd() string
	// Log is the session's event log; members append their own audit
	// events (hook/invoked, knob switches) to it.
	Log() *session.Log
	// Host is what the session's host supplies and what the session
	// offers (its knobs, its tool registry); a Conversation is therefore a
	// capabilities.Env, and capabilities.HostOf reads it.
	Host() *capabilities.Host
}

// Context is additional context for the model: one context/message.
type Context struct {
	// Source names who adds it ({"kind":"plugin","plugin":…}).
	Source session.Source
	// Content holds the message's blocks.
	Content []session.Block
}

// Prompt is one drained prompt, before it is logged.
type Prompt struct {
	// Turn is the open turn's number.
	Turn int
	// Content is the prompt's blocks.
	Content []session.Block
	// Source is who sent it.
	Source session.Source
}

// Text concatenates the prompt's text blocks.
func (p Prompt) Text() string { return textOf(p.Content) }

// PromptDecision is the prompt-submit chain's answer for one prompt.
type PromptDecision struct {
	// Block vetoes the prompt: it is logged as prompt/blocked.
	Block bool
	// Reason says why (recorded; the turn's end reason when every prompt
	// of the turn is blocked).
	Reason string
	// Context, when set on an allowed prompt, is appended right after its
	// user/message.
	Context *Context
}

// Step names the step about to start.
type Step struct {
	Turn, Step int
}

// StepDecision is the pre-step chain's answer: notices appended, in order,
// before step/start.
type StepDecision struct {
	Notices []Context
}

// Call is one tool call about to run (or just run).
type Call struct {
	Turn, Step int
	// CallID is the model's id for the call.
	CallID string
	// Name is the tool name.
	Name string
	// Arguments is the raw arguments string as streamed.
	Arguments string
	// Args is the parsed arguments value (capabilities.ParseArgs).
	Args json.RawMessage
}

// ToolVerdict is a pre-execute verdict.
type ToolVerdict int

// Pre-execute verdicts.
const (
	// ToolPass lets the call go on to the next member and then the tool.
	ToolPass ToolVerdict = iota
	// ToolDeny refuses the call: its result is "Error: <reason>".
	ToolDeny
	// ToolAsk sends the call to the approval service (reason kept).
	ToolAsk
)

// ToolDecision is the pre-execute chain's answer for one call.
type ToolDecision struct {
	Verdict ToolVerdict
	Reason  string
}

// Result is a finished call's outcome as the post-execute chain sees it: a
// snapshot taken before the chain, so a member cannot change the recorded
// outcome except through its decision.
type Result struct {
	Content []session.Block
	IsError bool
	Error   *session.ErrorInfo
}

// Text concatenates the result's text blocks.
func (r Result) Text() string { return textOf(r.Content) }

// ResultDecision is the post-execute chain's answer for one result.
type ResultDecision struct {
	// Block replaces the result by one text block Feedback with isError.
	Block    bool
	Feedback string
	// Context is appended after the step's last tool/result.
	Context *Context
}

// StepEnd describes a step whose step/end was just logged.
type StepEnd struct {
	Turn, Step int
	// ToolCalls is how many tool calls the step ran.
	ToolCalls int
	// Continue is the default decision: the step had tool calls.
	Continue bool
	// Final is set when the step failed, was aborted or disposed: the turn
	// ends whatever the chain decides (members that only decide skip it).
	Final bool
}

// ContinueVerdict is a continuation verdict.
type ContinueVerdict int

// Continuation verdicts.
const (
	// ContinueDefault keeps the default (continue iff the step had tool
	// calls) and asks the next member.
	ContinueDefault ContinueVerdict = iota
	// ContinueForce runs another step; Steering, when set, is appended as
	// steering/message before it.
	ContinueForce
	// ContinueStop ends the turn after this step.
	ContinueStop
)

// ContinueDecision is the continuation chain's answer for one step.
type ContinueDecision struct {
	Verdict  ContinueVerdict
	Steering *Context
}

// PromptSubmitter is a member of the prompt-submit chain.
type PromptSubmitter interface {
	SubmitPrompt(ctx context.Context, s Conversation, p Prompt) (PromptDecision, error)
}

// StepPreparer is a member of the pre-step chain.
type StepPreparer interface {
	PrepareStep(ctx context.Context, s Conversation, st Step) (StepDecision, error)
}

// ToolGate is a member of the pre-execute chain.
type ToolGate interface {
	CheckTool(ctx context.Context, s Conversation, c Call) (ToolDecision, error)
}

// ResultReviewer is a member of the post-execute chain.
type ResultReviewer interface {
	ReviewResult(ctx context.Context, s Conversation, c Call, r Result) (ResultDecision, error)
}

// Continuer is a member of the continuation chain.
type Continuer interface {
	DecideContinuation(ctx context.Context, s Conversation, st StepEnd) (ContinueDecision, error)
}

// SessionStarter runs, detached, when a session starts (source "startup")
// or is loaded ("resume"). Context it returns is injected into the session.
type SessionStarter interface {
	StartSession(ctx context.Context, s Conversation, source string) (*Context, error)
}

// SubagentWatcher runs when a child agent starts and when it ends (the
// hook bridges' SubagentStart and SubagentStop; detached points: nothing is
// logged and the decision changes nothing). Context returned at the start
// is injected into the child.
type SubagentWatcher interface {
	StartSubagent(ctx context.Context, child Conversation) (*Context, error)
	StopSubagent(ctx context.Context, child Conversation) error
}

// Namer is implemented by members that name themselves in diagnostics.
type Namer interface {
	Name() string
}

// Pipeline holds one session's members, chain by chain, in registration
// order.
type Pipeline struct {
	log      zerolog.Logger
	prompt   []PromptSubmitter
	step     []StepPreparer
	gate     []ToolGate
	review   []ResultReviewer
	cont     []Continuer
	starters []SessionStarter
	watchers []SubagentWatcher
}

// New returns a pipeline of members; each joins every chain whose interface
// it implements. A member that implements none is an error.
func New(log zerolog.Logger, members ...any) (*Pipeline, error) {
	p := &Pipeline{log: log}
	for _, m := range members {
		joined := []bool{join(&p.prompt, m), join(&p.step, m), join(&p.gate, m), join(&p.review, m),
			join(&p.cont, m), join(&p.starters, m), join(&p.watchers, m)}
		if !slices.Contains(joined, true) {
			return nil, fmt.Errorf("pipeline: member %s joins no chain", name(m))
		}
	}
	return p, nil
}

// join appends m to chain when it implements the chain's interface.
func join[T any](chain *[]T, m any) bool {
	v, ok := m.(T)
	if ok {
		*chain = append(*chain, v)
	}
	return ok
}

// HasStarters reports whether any member runs at session start.
func (p *Pipeline) HasStarters() bool { return len(p.starters) > 0 }

// SubmitPrompt runs the prompt-submit chain. The first member that blocks
// ends the chain (later members do not run); contexts of the members that
// ran are merged into one message (see [Merge]). Fail-safe: pass.
func (p *Pipeline) SubmitPrompt(ctx context.Context, s Conversation, pr Prompt) PromptDecision {
	var merged *Context
	for _, m := range p.prompt {
		in := pr
		in.Content = CloneBlocks(pr.Content)
		d := contain(p, m, "prompt submit", PromptDecision{}, func() (PromptDecision, error) { return m.SubmitPrompt(ctx, s, in) })
		if d.Block {
			return PromptDecision{Block: true, Reason: d.Reason}
		}
		merged = Merge(merged, d.Context)
	}
	return PromptDecision{Context: merged}
}

// PrepareStep runs the pre-step chain and returns every member's notices
// in order. Fail-safe: no notices.
func (p *Pipeline) PrepareStep(ctx context.Context, s Conversation, st Step) []Context {
	var out []Context
	for _, m := range p.step {
		d := contain(p, m, "pre step", StepDecision{}, func() (StepDecision, error) { return m.PrepareStep(ctx, s, st) })
		for _, n := range d.Notices {
			if len(n.Content) > 0 {
				out = append(out, Context{Source: n.Source, Content: CloneBlocks(n.Content)})
			}
		}
	}
	return out
}

// CheckTool runs the pre-execute chain: the first member that denies or
// asks decides (later members do not run). Fail-safe: deny — a gate that
// breaks keeps the tool from running.
func (p *Pipeline) CheckTool(ctx context.Context, s Conversation, c Call) ToolDecision {
	for _, m := range p.gate {
		in := c
		in.Args = append(json.RawMessage(nil), c.Args...)
		safe := ToolDecision{Verdict: ToolDeny, Reason: fmt.Sprintf("tool %q was not run: the %s check failed", c.Name, name(m))}
		d := contain(p, m, "pre execute", safe, func() (ToolDecision, error) { return m.CheckTool(ctx, s, in) })
		if d.Verdict == ToolDeny || d.Verdict == ToolAsk {
			return d
		}
	}
	return ToolDecision{}
}

// ReviewResult runs the post-execute chain over a snapshot of r: the first
// member that blocks decides (later members do not run); contexts of the
// members that ran are merged, a block's included. Fail-safe: pass.
func (p *Pipeline) ReviewResult(ctx context.Context, s Conversation, c Call, r Result) ResultDecision {
	var merged *Context
	for _, m := range p.review {
		in := c
		in.Args = append(json.RawMessage(nil), c.Args...)
		res := Result{Content: CloneBlocks(r.Content), IsError: r.IsError}
		if r.Error != nil {
			e := *r.Error
			res.Error = &e
		}
		d := contain(p, m, "post execute", ResultDecision{}, func() (ResultDecision, error) { return m.ReviewResult(ctx, s, in, res) })
		merged = Merge(merged, d.Context)
		if d.Block {
			return ResultDecision{Block: true, Feedback: d.Feedback, Context: merged}
		}
	}
	return ResultDecision{Context: merged}
}

// DecideContinuation runs the continuation chain: the first member that
// forces or stops decides (later members do not run). Fail-safe: the
// default.
func (p *Pipeline) DecideContinuation(ctx context.Context, s Conversation, st StepEnd) ContinueDecision {
	for _, m := range p.cont {
		d := contain(p, m, "continuation", ContinueDecision{}, func() (ContinueDecision, error) { return m.DecideContinuation(ctx, s, st) })
		if d.Verdict == ContinueForce || d.Verdict == ContinueStop {
			if d.Steering != nil {
				st := *d.Steering
				st.Content = CloneBlocks(st.Content)
				d.Steering = &st
			}
			return d
		}
	}
	return ContinueDecision{}
}

// StartSession runs every session-start member (the caller runs this
// detached) and returns their contexts merged. Fail-safe: none.
func (p *Pipeline) StartSession(ctx context.Context, s Conversation, source string) *Context {
	var merged *Context
	for _, m := range p.starters {
		d := contain(p, m, "session start", (*Context)(nil), func() (*Context, error) { return m.StartSession(ctx, s, source) })
		merged = Merge(merged, d)
	}
	return merged
}

// HasWatchers reports whether any member watches child agents.
func (p *Pipeline) HasWatchers() bool { return len(p.watchers) > 0 }

// StartSubagent runs every subagent watcher for a child that starts and
// returns their contexts merged. Fail-safe: none.
func (p *Pipeline) StartSubagent(ctx context.Context, child Conversation) *Context {
	var merged *Context
	for _, m := range p.watchers {
		d := contain(p, m, "subagent start", (*Context)(nil), func() (*Context, error) { return m.StartSubagent(ctx, child) })
		merged = Merge(merged, d)
	}
	return merged
}

// StopSubagent runs every subagent watcher for a child that ended.
func (p *Pipeline) StopSubagent(ctx context.Context, child Conversation) {
	for _, m := range p.watchers {
		contain(p, m, "subagent stop", struct{}{}, func() (struct{}, error) { return struct{}{}, m.StopSubagent(ctx, child) })
	}
}

// Merge folds next into acc: the blocks of both in order, the source of
// the first contributor (hooks contract § 6). Either may be nil; empty
// contexts contribute nothing.
func Merge(acc, next *Context) *Context {
	if next == nil || len(next.Content) == 0 {
		return acc
	}
	if acc == nil {
		return &Context{Source: next.Source, Content: CloneBlocks(next.Content)}
	}
	acc.Content = append(acc.Content, CloneBlocks(next.Content)...)
	return acc
}

// contain runs one member, turning an error or a panic into the chain's
// fail-safe decision and a logged diagnostic.
func contain[D any](p *Pipeline, m any, chain string, safe D, f func() (D, error)) (d D) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error().Str("chain", chain).Str("member", name(m)).Interface("panic", r).
				Str("stack", string(debug.Stack())).Msg("pipeline member panicked; using the fail-safe decision")
			d = safe
		}
	}()
	d, err := f()
	if err != nil {
		p.log.Error().Err(err).Str("chain", chain).Str("member", name(m)).Msg("pipeline member failed; using the fail-safe decision")
		return safe
	}
	return d
}

// name names a member for diagnostics.
func name(m any) string {
	if n, ok := m.(Namer); ok {
		return n.Name()
	}
	return fmt.Sprintf("%T", m)
}

// CloneBlocks deep-copies content blocks.
func CloneBlocks(bs []session.Block) []session.Block {
	if bs == nil {
		return nil
	}
	out := make([]session.Block, len(bs))
	for i, b := range bs {
		out[i] = b
		out[i].Content = CloneBlocks(b.Content)
		if b.IsError != nil {
			v := *b.IsError
			out[i].IsError = &v
		}
		if b.Raw != nil {
			out[i].Raw = append(json.RawMessage(nil), b.Raw...)
		}
	}
	return out
}

// textOf concatenates the text blocks of content.
func textOf(content []session.Block) string {
	s := ""
	for _, b := range content {
		if b.Type == session.BlockText {
			s += b.Text
		}
	}
	return s
}
