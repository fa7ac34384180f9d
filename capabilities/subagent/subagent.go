// Package subagent is delegation to child agents (subagents-workflows
// §§ 1–2, tools § 10): the subagent (spawn) and subagent_fork (fork)
// tools, and Run, which starts one child through the calling session's
// capabilities.Spawner, sends it one user message, waits for its turn,
// harvests its answer from its own log and disposes it. The workflow
// engine starts its children through Run too.
package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/structured"
	"github.com/dsh-acp/dsh-acp/session"
)

// Stop reasons of a child run.
const (
	StopCompleted = "completed"
	StopMaxTokens = "max-tokens"
	StopAborted   = "aborted"
	StopError     = "error"
)

// Error texts of the tools (tools § 10).
const (
	ErrNoAgent    = "subagent tool requires a calling agent (exec.agent was undefined)"
	ErrCancelled  = "subagent run was cancelled"
	ErrFailed     = "subagent run failed"
	ErrTokenLimit = "subagent run hit its token limit before finishing"
	ErrDeclined   = "subagent declined the task"
)

// Abort reasons a child's turn records.
const (
	ReasonParentAborted = "parent step aborted"
	ReasonCancelled     = "subagent cancelled"
)

// Request is one child run.
type Request struct {
	// Fork seeds the child with the parent's completed turns.
	Fork bool
	// Prompt is the child's one user message.
	Prompt string
	// Model overrides the child's model ("" keeps the parent's).
	Model string
	// Title names the child for an editor that shows child sessions.
	Title string
	// Schema makes the run structured: the child gets structured_output
	// and must call it; the captured value is the run's Value.
	Schema *structured.Schema
	// Nudges is how many times a structured child that finishes without
	// a capture is told to call structured_output (0: upstream, none).
	Nudges int
	// Observe, when set, sees every event the child appends, in order
	// (progress for the parent's card). It must not block.
	Observe func(session.Event)
	// OnStart, when set, is called with the child's id once it exists.
	OnStart func(id string)
}

// Outcome is a finished child run.
type Outcome struct {
	// ChildID is the child's session id.
	ChildID string
	// Stop is the run's stop reason (StopCompleted, …).
	Stop string
	// Text is the child's final answer: the text blocks of its last
	// assistant/message, concatenated.
	Text string
	// Value is a structured run's captured value (nil when none).
	Value json.RawMessage
	// Limit says which delegation ceiling of the session stopped the
	// child's turn ("" when none did).
	Limit string
}

// Err maps a run that did not complete to the tools' error text (nil for a
// completed run).
func (o Outcome) Err() error {
	switch o.Stop {
	case StopCompleted:
		return nil
	case StopMaxTokens:
		return errors.New(ErrTokenLimit)
	case StopAborted:
		return errors.New(ErrCancelled)
	}
	if o.Limit != "" {
		return errors.New(ErrFailed + ": " + o.Limit)
	}
	return errors.New(ErrFailed)
}

// Run starts a child of sp, prompts it once, harvests the outcome and
// disposes the child. Cancelling ctx (the parent's step) cancels the child,
// whose turn ends aborted with ReasonParentAborted. The error is only for
// a child that could not be started.
func Run(ctx context.Context, sp capabilities.Spawner, r Request) (Outcome, error) {
	opts := capabilities.ChildOptions{Fork: r.Fork, Model: r.Model, Title: r.Title}
	var capture *structured.Capture
	if r.Schema != nil {
		capture = structured.NewCapture(r.Schema).WithNudges(r.Nudges)
		opts.Extra = []capabilities.Tool{capture.Tool()}
		opts.Members = []any{capture.Member()}
	}
	child, err := sp.Spawn(ctx, opts)
	if err != nil {
		return Outcome{}, err
	}
	if r.OnStart != nil {
		r.OnStart(child.ID())
	}
	seed := child.Log().NextSeq() // a seq, not an index: the log may release events
	if r.Observe != nil {
		unsubscribe := child.Log().Subscribe(r.Observe)
		defer unsubscribe()
	}
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() {
		// The parent's own reason when it gave one (a killed background
		// child), else the parent's step was aborted.
		cause := context.Cause(ctx)
		if cause == nil || errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
			cause = errors.New(ReasonParentAborted)
		}
		cancel(cause)
	})
	defer stop()
	end := child.Prompt(runCtx, r.Prompt)
	out := harvest(since(child.Log().Events(), seed), end)
	out.ChildID = child.ID()
	if end.Code == capabilities.CodeDelegationLimit {
		out.Limit = end.Message
	}
	if capture != nil {
		if v, ok := capture.Value(); ok {
			out.Value = v
		} else if out.Stop == StopCompleted {
			// A structured run that finishes without a capture failed.
			out.Stop = StopError
		}
	}
	if err := child.Close(context.WithoutCancel(ctx)); err != nil {
		return out, nil //nolint:nilerr // the outcome stands; the child's log error is the store's to report
	}
	return out, nil
}

// since returns the events from seq on.
func since(events []session.Event, seq int) []session.Event {
	i := sort.Search(len(events), func(i int) bool { return events[i].Seq >= seq })
	return events[i:]
}

// harvest reads a child's own events (after its seed): the text of its last
// assistant/message and the stop reason of its last turn/end.
func harvest(events []session.Event, end session.EndReason) Outcome {
	var o Outcome
	o.Stop = stopOf(end.Kind)
	sawEnd := false
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Type == session.TypeTurnEnd && !sawEnd {
			var te session.TurnEnd
			if e.Decode(&te) == nil {
				o.Stop = stopOf(te.Reason.Kind)
				sawEnd = true
			}
		}
		if e.Type == session.TypeAssistantMessage {
			var m session.AssistantMessage
			if e.Decode(&m) == nil {
				var b strings.Builder
				for _, blk := range m.Content {
					if blk.Type == session.BlockText {
						b.WriteString(blk.Text)
					}
				}
				o.Text = b.String()
			}
			break
		}
	}
	return o
}

// stopOf maps a turn's end kind to a run's stop reason.
func stopOf(kind string) string {
	switch kind {
	case session.EndCompleted:
		return StopCompleted
	case session.EndMaxTokens:
		return StopMaxTokens
	case session.EndAborted, session.EndDisposed:
		return StopAborted
	}
	return StopError
}
