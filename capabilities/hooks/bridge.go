package hooks

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

// Counter numbers hook executions for handler ids; one per dialect, shared
// by every bridge of the process.
type Counter struct{ n atomic.Int64 }

func (c *Counter) next() int64 { return c.n.Add(1) }

// Consent decides whether a session may run the hooks that need the
// user's agreement (Group.Untrusted: a project's hooks). It is asked each
// time such a hook would run, and remembers what it can.
type Consent interface {
	Allow(ctx context.Context, s pipeline.Conversation) bool
}

// Bridge is one dialect's hooks on the turn pipeline: a member of the
// prompt-submit (UserPromptSubmit), pre-execute (PreToolUse), post-execute
// (PostToolUse) and continuation (Stop) chains, and a session starter
// (SessionStart, detached). A bridge holds no session state; share one
// between sessions when their configuration is the same.
type Bridge struct {
	// Config is the dialect's hooks.
	Config *Config
	// Runner runs the commands.
	Runner *Runner
	// Counter numbers executions (nil: the bridge's own).
	Counter *Counter
	// Log receives warnings (hooks asking for what is not honored).
	Log zerolog.Logger
	// ProjectDir, when set, replaces ${CLAUDE_PROJECT_DIR} in Claude
	// commands with the session's working directory.
	ProjectDir bool
	// Consent is asked before an untrusted group runs (nil: untrusted
	// groups never run).
	Consent Consent

	own Counter
}

// Name implements pipeline.Namer.
func (b *Bridge) Name() string { return b.Config.Dialect.Plugin() }

func (b *Bridge) counter() *Counter {
	if b.Counter != nil {
		return b.Counter
	}
	return &b.own
}

// source is the bridge's context source.
func (b *Bridge) source() session.Source {
	return session.PluginSource(b.Config.Dialect.Plugin())
}

// context turns merged contexts into one message, one block each.
func (b *Bridge) context(m Merged) *pipeline.Context {
	if len(m.Contexts) == 0 {
		return nil
	}
	c := &pipeline.Context{Source: b.source()}
	for _, t := range m.Contexts {
		c.Content = append(c.Content, session.TextBlock(t))
	}
	return c
}

// point runs every hook of point whose group matches query, sequentially,
// logging hook/invoked + hook/result when logged, and merges the outputs.
func (b *Bridge) point(ctx context.Context, s pipeline.Conversation, e event, query string, logged bool) Merged {
	groups := b.Config.Points[e.point]
	if len(groups) == 0 {
		return Merged{Decision: MergedNone}
	}
	if logged && e.turn == 0 {
		e.turn = lastTurn(s)
	}
	d := b.Config.Dialect
	var outs []Output
	for gi := range groups {
		g := &groups[gi]
		if !g.Matches(query) {
			continue
		}
		if g.Untrusted && (b.Consent == nil || !b.Consent.Allow(ctx, s)) {
			continue
		}
		for _, h := range g.Hooks {
			id := fmt.Sprintf("%s:%s:%d", d, e.point, b.counter().next())
			if logged {
				appendInvoked(s.Log(), Invoked{Turn: e.turn, Point: e.point, Dialect: d, HandlerID: id, Matcher: g.Matcher})
			}
			out := b.runOne(ctx, s, e, h)
			outs = append(outs, out.Output)
			if logged {
				r := Result{Turn: e.turn, Point: e.point, HandlerID: id, Decision: out.Recorded(), ExitCode: out.ExitCode,
					StderrSummary: summarize(out.Stderr), DurationMs: float64(out.duration) / float64(time.Millisecond)}
				appendResult(s.Log(), r)
			}
		}
	}
	return Merge(outs)
}

type ranHook struct {
	Output
	duration time.Duration
}

// runOne runs one hook and decodes it.
func (b *Bridge) runOne(ctx context.Context, s pipeline.Conversation, e event, h Command) ranHook {
	d := b.Config.Dialect
	stdin := payload(d, s, e)
	var env []string
	cmd := h.Command
	if d == Claude {
		stdin = append(stdin, '\n')
		env = []string{"CLAUDE_PROJECT_DIR=" + s.Cwd()}
		if b.ProjectDir {
			cmd = strings.ReplaceAll(cmd, "${CLAUDE_PROJECT_DIR}", s.Cwd())
		}
	}
	r := b.Runner.Run(ctx, s, Spec{Command: cmd, Dir: s.Cwd(), Stdin: stdin, Env: env, Timeout: h.Timeout})
	out := Decode(d, e.point, r)
	if out.UpdatedInput {
		b.Log.Warn().Str("dialect", string(d)).Str("point", e.point).Msg("a hook asked for updatedInput, which is not honored (ignored)")
	}
	if out.SystemMessage != "" {
		b.Log.Warn().Str("dialect", string(d)).Str("point", e.point).Msg("a hook emitted a systemMessage, which is not surfaced (ignored)")
	}
	return ranHook{Output: out, duration: r.Duration}
}

// lastTurn is the number of the log's last turn/start.
func lastTurn(s pipeline.Conversation) int { return session.LastTurn(s.Log().Events()) }

// SubmitPrompt implements pipeline.PromptSubmitter (UserPromptSubmit).
func (b *Bridge) SubmitPrompt(ctx context.Context, s pipeline.Conversation, p pipeline.Prompt) (pipeline.PromptDecision, error) {
	m := b.point(ctx, s, event{point: UserPromptSubmit, turn: p.Turn, prompt: p.Text()}, "", true)
	if m.Decision == MergedDeny {
		return pipeline.PromptDecision{Block: true, Reason: orDefault(m.Reason, "blocked by UserPromptSubmit hook")}, nil
	}
	return pipeline.PromptDecision{Context: b.context(m)}, nil
}

// CheckTool implements pipeline.ToolGate (PreToolUse). A Claude "ask"
// goes to the approval path; Codex has no ask.
func (b *Bridge) CheckTool(ctx context.Context, s pipeline.Conversation, c pipeline.Call) (pipeline.ToolDecision, error) {
	m := b.point(ctx, s, event{point: PreToolUse, call: &c}, c.Name, true)
	switch {
	case m.Decision == MergedDeny:
		return pipeline.ToolDecision{Verdict: pipeline.ToolDeny, Reason: orDefault(m.Reason, "blocked by PreToolUse hook")}, nil
	case m.Decision == MergedAsk && b.Config.Dialect == Claude:
		return pipeline.ToolDecision{Verdict: pipeline.ToolAsk, Reason: m.Reason}, nil
	}
	return pipeline.ToolDecision{}, nil
}

// ReviewResult implements pipeline.ResultReviewer (PostToolUse, also for
// denied and failed calls).
func (b *Bridge) ReviewResult(ctx context.Context, s pipeline.Conversation, c pipeline.Call, r pipeline.Result) (pipeline.ResultDecision, error) {
	if len(b.Config.Points[PostToolUse]) == 0 {
		return pipeline.ResultDecision{}, nil
	}
	text := r.Text()
	m := b.point(ctx, s, event{point: PostToolUse, call: &c, result: &text}, c.Name, true)
	d := pipeline.ResultDecision{Context: b.context(m)}
	if m.Decision == MergedDeny {
		d.Block, d.Feedback = true, orDefault(m.Reason, "blocked by PostToolUse hook")
	}
	return d, nil
}

// DecideContinuation implements pipeline.Continuer (Stop, after every
// successful step): a block forces another step steered by its reason.
func (b *Bridge) DecideContinuation(ctx context.Context, s pipeline.Conversation, st pipeline.StepEnd) (pipeline.ContinueDecision, error) {
	if st.Final {
		return pipeline.ContinueDecision{}, nil
	}
	m := b.point(ctx, s, event{point: Stop, turn: st.Turn}, "", true)
	if m.Decision != MergedDeny {
		return pipeline.ContinueDecision{}, nil
	}
	text := orDefault(m.Reason, "continue: blocked by Stop hook")
	return pipeline.ContinueDecision{Verdict: pipeline.ContinueForce, Steering: &pipeline.Context{
		Source: b.source(), Content: []session.Block{session.TextBlock(text)}}}, nil
}

// StartSession implements pipeline.SessionStarter (SessionStart, detached
// and not logged); its context is injected into the session.
func (b *Bridge) StartSession(ctx context.Context, s pipeline.Conversation, source string) (*pipeline.Context, error) {
	if len(b.Config.Points[SessionStart]) == 0 {
		return nil, nil
	}
	return b.context(b.point(ctx, s, event{point: SessionStart, source: source}, source, false)), nil
}

// StartSubagent implements pipeline.SubagentWatcher (SubagentStart,
// Claude only, detached and not logged): the payload is built from the
// child, the match query is the agent type, and the context is injected
// into the child.
func (b *Bridge) StartSubagent(ctx context.Context, child pipeline.Conversation) (*pipeline.Context, error) {
	if len(b.Config.Points[SubagentStart]) == 0 {
		return nil, nil
	}
	return b.context(b.point(ctx, child, event{point: SubagentStart}, subagentType, false)), nil
}

// StopSubagent implements pipeline.SubagentWatcher (SubagentStop, Claude
// only, detached and not logged; its decision changes nothing).
func (b *Bridge) StopSubagent(ctx context.Context, child pipeline.Conversation) error {
	if len(b.Config.Points[SubagentStop]) == 0 {
		return nil
	}
	b.point(ctx, child, event{point: SubagentStop}, subagentType, false)
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
