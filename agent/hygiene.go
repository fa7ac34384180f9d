package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

// Loop hygiene (Config.ParallelTools, RetryEmpty, NoticeDroppedCalls):
// independent read-only calls of one step run concurrently, an answer cut
// at its output limit that dropped a tool call says so, and an empty
// answer is asked for again once.

// EmptyRetryNotice is the notice of an empty model answer asked for again.
const EmptyRetryNotice = "The model sent an empty answer; asking it once more."

// droppedNotice is the notice of a max-tokens cut that dropped calls.
func droppedNotice(names []string) string {
	return fmt.Sprintf("The model's answer hit its output limit (max tokens) while it was writing a tool call (%s); "+
		"the cut call did not run and the turn ends here. Send another prompt to go on.", strings.Join(names, ", "))
}

// droppedCalls returns the names of the tool calls in content.
func droppedCalls(content []session.Block) []string {
	var names []string
	for _, b := range content {
		if b.Type == session.BlockToolCall {
			name := b.Name
			if name == "" {
				name = "unnamed"
			}
			names = append(names, name)
		}
	}
	return names
}

// emptyAnswer reports an answer with nothing in it that ended normally.
func emptyAnswer(content []session.Block, f llm.FinishReason) bool {
	if f.Kind != llm.FinishStop {
		return false
	}
	for _, b := range content {
		switch b.Type {
		case session.BlockToolCall:
			return false
		default:
			if strings.TrimSpace(b.Text) != "" {
				return false
			}
		}
	}
	return true
}

// notice logs a model/notice for the step.
func (s *Session) notice(ref session.StepRef, text string) {
	s.log.Append(TypeModelNotice, ModelNotice{Turn: ref.Turn, Step: ref.Step, Text: text})
}

// parallel reports whether a call may run concurrently with its
// neighbours.
func (s *Session) parallel(name string) bool {
	return slices.Contains(s.rt.cfg.ParallelTools, name)
}

// pendingCall is a logged call of a concurrent batch.
type pendingCall struct {
	call  pipeline.Call
	seq   int
	out   capabilities.Outcome
	ready bool // out was decided before the batch ran (deny)
}

// runBatch runs consecutive read-only calls: every tool/call is logged
// (and on disk) first, the pre-execute chain decides each in call order,
// the allowed ones run concurrently, then the post-execute chain reviews
// each and the results are logged, all in call order.
func (s *Session) runBatch(ctx context.Context, turn, step int, blocks []session.Block) []*pipeline.Context {
	batch := make([]pendingCall, len(blocks))
	for i, b := range blocks {
		ev := s.log.Append(session.TypeToolCall, session.ToolCall{Turn: turn, Step: step, CallID: b.ID, Name: b.Name, Arguments: b.Arguments})
		batch[i] = pendingCall{seq: ev.Seq, call: pipeline.Call{Turn: turn, Step: step, CallID: b.ID, Name: b.Name, Arguments: b.Arguments,
			Args: capabilities.ParseArgs(b.Arguments)}}
	}
	s.persist(ctx)
	var run []int
	for i := range batch {
		switch d := s.pipe.CheckTool(ctx, s, batch[i].call); d.Verdict {
		case pipeline.ToolDeny:
			batch[i].out, batch[i].ready = errorText(d.Reason), true
		case pipeline.ToolAsk:
			// Questions to the user go one at a time, in call order.
			batch[i].out, batch[i].ready = s.askTool(ctx, batch[i].call, d.Reason), true
		default:
			run = append(run, i)
		}
	}
	var wg sync.WaitGroup
	for _, i := range run {
		wg.Add(1)
		go func(p *pendingCall) {
			defer wg.Done()
			p.out = s.tools.Execute(ctx, s, p.call.CallID, p.call.Name, p.call.Arguments)
		}(&batch[i])
	}
	wg.Wait()
	var contexts []*pipeline.Context
	for i := range batch {
		p := &batch[i]
		out := p.out
		r := s.pipe.ReviewResult(ctx, s, p.call, pipeline.Result{Content: out.Content, IsError: out.IsError, Error: out.Error})
		if r.Block {
			out = capabilities.Outcome{Content: []session.Block{session.TextBlock(r.Feedback)}, IsError: true}
		}
		s.log.Append(session.TypeToolResult, session.ToolResult{
			Turn: turn, Step: step, CallID: p.call.CallID, Content: out.Content, IsError: out.IsError, Error: out.Error, Meta: out.Meta,
		}, session.WithSourceSeqs([]int{p.seq}))
		contexts = append(contexts, r.Context)
	}
	s.persist(ctx)
	return contexts
}

// batchAt returns how many tool calls from calls[i] on form a concurrent
// batch (consecutive parallel calls, none oversized); below 2 the call
// runs on its own.
func (s *Session) batchAt(calls []session.Block, i int, oversized map[string]int) int {
	n := 0
	for _, b := range calls[i:] {
		if _, big := oversized[b.ID]; big || !s.parallel(b.Name) {
			break
		}
		n++
	}
	return n
}

// toolCalls returns the tool-call blocks of content, in order.
func toolCalls(content []session.Block) []session.Block {
	var calls []session.Block
	for _, b := range content {
		if b.Type == session.BlockToolCall {
			calls = append(calls, b)
		}
	}
	return calls
}
