package agent

import (
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
)

// Loop hygiene (Config.ParallelReads, RetryEmpty, NoticeDroppedCalls):
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

// parallel reports whether a call of the tool named name may run
// concurrently with its neighbours: the loop batches calls
// (Config.ParallelReads) and the tool says it only reads and does not ask
// for its calls to go one at a time.
func (s *Session) parallel(name string) bool {
	if !s.rt.cfg.ParallelReads {
		return false
	}
	t, ok := s.tools.Lookup(name)
	return ok && t.Traits().ReadOnly && !t.Traits().Sequential
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
