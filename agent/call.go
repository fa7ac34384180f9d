package agent

import (
	"context"
	"fmt"
	"sync"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

// pendingCall is one tool call on its way through the session: the model's
// (one at a time, or in a batch of read-only calls) and a program's
// (run_code's tools.<name>, see Dispatch) take the same way, Session.run.
type pendingCall struct {
	pipeline.Call
	// seq is the call's tool/call event (0: not logged here).
	seq int
	// out is the outcome to record.
	out capabilities.Outcome
	// decided: out was settled before the tool ran (a denial, the answer
	// of an approval, arguments cut off).
	decided bool
	// unreviewed: out is recorded as it is, without the post-execute
	// chain (arguments cut off: nothing ran, so there is nothing to
	// review).
	unreviewed bool
	// extra is the context the post-execute chain added for the model.
	extra *pipeline.Context
}

// newPendingCall is a call of turn and step, not yet gated.
func newPendingCall(turn, step int, callID, name, arguments string) *pendingCall {
	return &pendingCall{Call: pipeline.Call{Turn: turn, Step: step, CallID: callID, Name: name, Arguments: arguments,
		Args: capabilities.ParseArgs(arguments)}}
}

// run takes calls the one way every tool call goes — gate, run, review:
// the pre-execute chain decides each in call order (a question to the
// user goes one at a time), the allowed ones run (at once when there are
// several), then the post-execute chain reviews each in call order and
// done, when set, records it.
func (s *Session) run(ctx context.Context, calls []*pendingCall, done func(*pendingCall)) {
	var allowed []*pendingCall
	for _, c := range calls {
		if !c.decided {
			s.gate(ctx, c)
		}
		if !c.decided {
			allowed = append(allowed, c)
		}
	}
	if len(allowed) == 1 {
		allowed[0].out = s.tools.Execute(ctx, s, allowed[0].CallID, allowed[0].Name, allowed[0].Arguments)
	} else {
		var wg sync.WaitGroup
		for _, c := range allowed {
			wg.Go(func() { c.out = s.tools.Execute(ctx, s, c.CallID, c.Name, c.Arguments) })
		}
		wg.Wait()
	}
	for _, c := range calls {
		if !c.unreviewed {
			s.review(ctx, c)
		}
		if done != nil {
			done(c)
		}
	}
}

// gate runs the pre-execute chain on c: a denial or an approval's answer
// decides it (an allowed approval runs the tool at once); otherwise c is
// left to run.
func (s *Session) gate(ctx context.Context, c *pendingCall) {
	switch d := s.pipe.CheckTool(ctx, s, c.Call); d.Verdict {
	case pipeline.ToolDeny:
		c.out, c.decided = errorText(d.Reason), true
	case pipeline.ToolAsk:
		c.out, c.decided = s.askTool(ctx, c.Call, d.Reason), true
	}
}

// review runs the post-execute chain on c's outcome: a block replaces it
// with the chain's feedback; context the chain adds is kept for the model.
func (s *Session) review(ctx context.Context, c *pendingCall) {
	out := c.out
	r := s.pipe.ReviewResult(ctx, s, c.Call, pipeline.Result{Content: out.Content, IsError: out.IsError, Error: out.Error})
	if r.Block {
		c.out = capabilities.Outcome{Content: []session.Block{session.TextBlock(r.Feedback)}, IsError: true}
	}
	c.extra = r.Context
}

// askTool is the approval path of a call a pre-execute member sent to ask:
// without an approval service the call is denied; otherwise it runs only
// when the user allows it.
func (s *Session) askTool(ctx context.Context, c pipeline.Call, reason string) capabilities.Outcome {
	if s.rt.cfg.Approval == nil {
		if reason == "" {
			reason = fmt.Sprintf("tool %q requires approval (not yet supported)", c.Name)
		}
		return errorText(reason)
	}
	if reason == "" {
		reason = s.askReason(c.Name)
	}
	o, err := s.rt.cfg.Approval.Request(ctx, s.log, approval.Request{ToolName: c.Name, CallID: c.CallID, Reason: reason,
		Action: c.Name + " " + string(c.Args)})
	if err != nil {
		return errorText(err.Error())
	}
	switch o {
	case approval.AllowedOnce, approval.AllowedAlways:
		return s.tools.Execute(ctx, s, c.CallID, c.Name, c.Arguments)
	case approval.Rejected:
		return errorText(fmt.Sprintf("the user rejected running tool %q", c.Name))
	case approval.Cancelled:
		return errorText(fmt.Sprintf("approval for tool %q was cancelled", c.Name))
	}
	return errorText(fmt.Sprintf("tool %q requires approval, but no approval channel is available", c.Name))
}

// askReason says what a call a member sent to ask without a reason would
// do, by what its tool says it does: the question the user reads ("The
// agent asks to <reason>").
func (s *Session) askReason(name string) string {
	t, ok := s.tools.Lookup(name)
	if !ok {
		return "run " + name
	}
	switch tr := t.Traits(); {
	case tr.Runs:
		return "run a command with " + name
	case tr.Writes:
		return "change files with " + name
	case tr.Delegates:
		return "hand work to other agents with " + name
	case tr.Program:
		return "run a program over the tools with " + name
	case tr.Network:
		return "reach the network with " + name
	case tr.ReadOnly:
		return "read with " + name
	}
	return "run " + name
}

// errorText is a plain denial result: "Error: <text>", no error field.
func errorText(text string) capabilities.Outcome {
	return capabilities.Outcome{Content: []session.Block{session.TextBlock("Error: " + text)}, IsError: true}
}

// runToolCalls runs a step's tool calls in order, each group — a batch of
// consecutive read-only calls (see batchAt), else one call — on the one
// path (Session.run): its tool/call events are logged and on disk before
// anything runs (a crash leaves the cards for the next load), and each
// tool/result follows its call's review, in call order. It returns how
// many calls there were and the context their reviews added, to append
// after the results; it stops after the group during which ctx ended.
func (s *Session) runToolCalls(ctx context.Context, ref session.StepRef, blocks []session.Block, oversized map[string]int) (int, []*pipeline.Context) {
	var contexts []*pipeline.Context
	record := func(c *pendingCall) {
		s.log.Append(session.TypeToolResult, session.ToolResult{
			Turn: ref.Turn, Step: ref.Step, CallID: c.CallID, Content: c.out.Content, IsError: c.out.IsError, Error: c.out.Error, Meta: c.out.Meta,
		}, session.WithSourceSeqs([]int{c.seq}))
		contexts = append(contexts, c.extra)
	}
	calls := 0
	for j := 0; j < len(blocks); {
		group := blocks[j : j+max(1, s.batchAt(blocks, j, oversized))]
		cs := make([]*pendingCall, len(group))
		for i, b := range group {
			ev := s.log.Append(session.TypeToolCall, session.ToolCall{Turn: ref.Turn, Step: ref.Step, CallID: b.ID, Name: b.Name, Arguments: b.Arguments})
			cs[i] = newPendingCall(ref.Turn, ref.Step, b.ID, b.Name, b.Arguments)
			cs[i].seq = ev.Seq
			if n, big := oversized[b.ID]; big {
				cs[i].out = errorText(fmt.Sprintf("the arguments of this %s call were cut off: more than %d bytes (the limit is %d, maxToolArgBytes); nothing ran. "+
					"Send large content in smaller pieces (for example several edits, or a file written in parts).", b.Name, n, s.rt.maxToolArgBytes()))
				cs[i].decided, cs[i].unreviewed = true, true
			}
		}
		s.persist(ctx)
		s.run(ctx, cs, record)
		s.persist(ctx)
		calls += len(group)
		j += len(group)
		if ctx.Err() != nil {
			break
		}
	}
	return calls, contexts
}
