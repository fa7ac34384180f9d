package agent

import (
	"fmt"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
)

// Role names of derived messages.
const (
	roleUser      = "user"
	roleAssistant = "assistant"
)

// unansweredResult is the derived result of a tool call whose result was
// never logged (its turn was cancelled before the call ran).
const unansweredResult = "Tool call was not run: the turn ended before its result was recorded."

// deriveMessages computes the model's history from the log: one message per
// surface event, in order (session-log contract § 8).
func deriveMessages(events []session.Event) []llm.Message {
	msgs, _ := deriveHistory(events)
	return msgs
}

// deriveHistory is deriveMessages that also returns, per message, the seq
// of the event it came from (-1 for a message the derivation made up).
//
// The derivation keeps the history a valid chat sequence whatever order
// the log holds (a log written by an older build may have a context
// message between a tool call and its result, or a turn cancelled before
// every call of its last step ran): a non-result message that arrives
// while tool calls are open is held back until their results are in; a
// call still open when the conversation moves on (a user or assistant
// message, or the end of the log) gets a synthetic error result; a result
// that answers no open call is dropped. The log itself is never changed.
func deriveHistory(events []session.Event) ([]llm.Message, []int) {
	d := deriver{}
	for _, e := range events {
		d.event(e)
	}
	d.closeOpen()
	return d.out, d.seqs
}

// event feeds one event to the derivation (all but surface events are
// ignored).
func (d *deriver) event(e session.Event) {
	switch e.Type {
	case session.TypeUserMessage:
		var m session.Message
		if e.Decode(&m) == nil {
			d.closeOpen()
			d.userAt, d.hasUser = len(d.out), true
			d.add(llm.Message{Role: roleUser, Content: m.Content}, e.Seq)
		}
	case session.TypeAssistantMessage:
		var m session.AssistantMessage
		if e.Decode(&m) == nil && len(m.Content) > 0 {
			d.closeOpen()
			d.add(llm.Message{Role: roleAssistant, Content: m.Content}, e.Seq)
			for _, b := range m.Content {
				if b.Type == session.BlockToolCall {
					d.open = append(d.open, b.ID)
				}
			}
		}
	case session.TypeToolResult:
		var r session.ToolResult
		if e.Decode(&r) == nil {
			d.result(r.CallID, r.Content, r.IsError, e.Seq)
		}
	case session.TypeContextMessage, session.TypeSteeringMessage:
		var m session.Message
		if e.Decode(&m) == nil {
			tag := "context"
			if e.Type == session.TypeSteeringMessage {
				tag = "steering"
			}
			content := []session.Block{session.TextBlock("<" + tag + " source=" + string(jsonx.MustMarshal(m.Source.Kind)) + ">")}
			content = append(content, m.Content...)
			content = append(content, session.TextBlock("</"+tag+">"))
			msg := llm.Message{Role: roleUser, Content: content}
			if len(d.open) > 0 {
				d.held = append(d.held, msg)
				d.heldSeqs = append(d.heldSeqs, e.Seq)
			} else {
				d.add(msg, e.Seq)
			}
		}
	}
}

// deriver is the state of one history derivation.
type deriver struct {
	out      []llm.Message
	seqs     []int
	open     []string // tool calls of the last assistant message still unanswered, in call order
	held     []llm.Message
	heldSeqs []int
	userAt   int  // messages before the latest user message
	hasUser  bool // a user message was derived
}

func (d *deriver) add(m llm.Message, seq int) {
	d.out = append(d.out, m)
	d.seqs = append(d.seqs, seq)
}

// result appends the result of an open call (and the held messages once
// no call is open); a result of no open call is dropped.
func (d *deriver) result(callID string, content []session.Block, isErr bool, seq int) {
	i := -1
	for j, id := range d.open {
		if id == callID {
			i = j
			break
		}
	}
	if i < 0 {
		return
	}
	d.open = append(d.open[:i], d.open[i+1:]...)
	d.add(resultMessage(callID, content, isErr), seq)
	if len(d.open) == 0 {
		d.flushHeld()
	}
}

// closeOpen answers every open call with the synthetic result, then
// releases the held messages.
func (d *deriver) closeOpen() {
	for _, id := range d.open {
		d.add(resultMessage(id, []session.Block{session.TextBlock(unansweredResult)}, true), -1)
	}
	d.open = d.open[:0]
	d.flushHeld()
}

func (d *deriver) flushHeld() {
	d.out = append(d.out, d.held...)
	d.seqs = append(d.seqs, d.heldSeqs...)
	d.held, d.heldSeqs = nil, nil
}

func resultMessage(callID string, content []session.Block, isErr bool) llm.Message {
	return llm.Message{Role: roleUser, Content: []session.Block{{
		Type: session.BlockToolResult, ToolCallID: callID, Content: content, IsError: &isErr,
	}}}
}

// checkHistory verifies that msgs is a sequence an OpenAI-compatible chat
// API accepts: every tool call of an assistant message is answered by
// exactly one result before any other message, and no result answers a
// call that is not open. seqs names the log event of each message, so the
// error says which event broke the sequence.
func checkHistory(msgs []llm.Message, seqs []int) error {
	open := map[string]bool{}
	for i, m := range msgs {
		if err := checkMessage(open, m, seqs[i]); err != nil {
			return err
		}
	}
	return checkEnd(open)
}

// checkMessage checks one message of checkHistory; open holds the calls
// not answered yet.
func checkMessage(open map[string]bool, m llm.Message, seq int) error {
	results, other := 0, false
	for _, b := range m.Content {
		if b.Type == session.BlockToolResult {
			results++
			if m.Role != roleUser || !open[b.ToolCallID] {
				return fmt.Errorf("history event #%d: tool result %q answers no open tool call", seq, b.ToolCallID)
			}
			delete(open, b.ToolCallID)
		} else {
			other = true
		}
	}
	if results > 0 {
		return nil
	}
	if len(open) > 0 && other {
		return fmt.Errorf("history event #%d: a %s message comes between a tool call and its result", seq, m.Role)
	}
	if m.Role == roleAssistant {
		for _, b := range m.Content {
			if b.Type == session.BlockToolCall {
				if open[b.ID] {
					return fmt.Errorf("history event #%d: duplicate tool call id %q", seq, b.ID)
				}
				open[b.ID] = true
			}
		}
	}
	return nil
}

// checkEnd is checkHistory's verdict on the calls left open at the end.
func checkEnd(open map[string]bool) error {
	if len(open) > 0 {
		return fmt.Errorf("history ends with %d unanswered tool call(s)", len(open))
	}
	return nil
}
