package code

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/session"
)

// program is the agent's side of one run_code run: it dispatches the
// program's calls through the session's pipeline and logs them.
type program struct {
	tool       Tool
	call       *capabilities.Call
	dispatcher capabilities.Dispatcher

	prev chan struct{} // closed when the latest dispatch finished (reader goroutine only)

	mu    sync.Mutex
	shown []string // progress lines: one per dispatch
}

// request handles a batch of the worker's requests (on the pool's reader
// goroutine): the whole batch queues in call order before any of it runs,
// and calls run one at a time — the n-th waits for the (n-1)-th, whatever
// batch it came in.
func (p *program) request(ctx context.Context, batch []jsworker.Request) {
	for _, r := range batch {
		if r.Type != jsproto.TypeCall || r.Call == nil {
			r.Answer(jsproto.Reply{Text: "run_code programs can only call tools", IsError: true})
			continue
		}
		c, answer := *r.Call, r.Answer
		subID := fmt.Sprintf("%s:code:%d", p.call.CallID, c.ID)
		prev, done := p.prev, make(chan struct{})
		p.prev = done
		go func() {
			if prev != nil {
				<-prev
			}
			out := p.runOne(ctx, subID, c.Name, c.Args)
			close(done)
			answer(jsproto.Reply{Text: out.text, IsError: out.isError})
		}()
	}
}

type dispatched struct {
	text    string
	isError bool
}

// runOne dispatches a call through the session's pipeline and logs it.
func (p *program) runOne(ctx context.Context, subID, name, args string) dispatched {
	if p.dispatcher == nil {
		return dispatched{text: "Error: run_code requires a calling agent to dispatch tools", isError: true}
	}
	out := p.dispatcher.Dispatch(ctx, p.call.CallID, subID, name, args)
	text := resultText(out.Content)
	summary := text
	if r := []rune(summary); len(r) > summaryChars {
		summary = string(r[:summaryChars]) + "…"
	}
	if p.call.Session != nil && p.call.Session.Log() != nil {
		log := p.call.Session.Log()
		log.Append(TypeDispatch, Dispatch{ParentCallID: p.call.CallID, SubCallID: subID, Name: name,
			Arguments: json.RawMessage(args), IsError: out.IsError, ResultSummary: summary})
		if p.tool.Progress {
			p.progress(log, name, args, out.IsError)
		}
	}
	return dispatched{text: text, isError: out.IsError}
}

// resultText joins a result's blocks: text as is, others as "[<type> content]".
func resultText(content []session.Block) string {
	parts := make([]string, 0, len(content))
	for _, b := range content {
		if b.Type == session.BlockText {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+" content]")
		}
	}
	return strings.Join(parts, "\n")
}

// progress logs the dispatches so far as the run_code call's card content:
// one line per tools.<name> call, in call order (✓ done, ✗ failed), with
// its main argument.
func (p *program) progress(log *session.Log, name, args string, failed bool) {
	mark := "✓ "
	if failed {
		mark = "✗ "
	}
	line := mark + name
	var a map[string]any
	if json.Unmarshal([]byte(args), &a) == nil {
		for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query", "description"} {
			if s, ok := a[k].(string); ok && s != "" {
				first, _, _ := strings.Cut(s, "\n")
				if r := []rune(first); len(r) > 80 {
					first = string(r[:79]) + "…"
				}
				line += ": " + first
				break
			}
		}
	}
	p.mu.Lock()
	p.shown = append(p.shown, line)
	lines := p.shown
	if len(lines) > 12 {
		lines = append([]string{fmt.Sprintf("… %d earlier calls", len(lines)-12)}, lines[len(lines)-12:]...)
	}
	text := strings.Join(lines, "\n")
	p.mu.Unlock()
	turn, step := 0, 0
	events := log.Events()
	for i := len(events) - 1; i >= 0; i-- {
		var tc session.ToolCall
		if events[i].Type == session.TypeToolCall && events[i].Decode(&tc) == nil && tc.CallID == p.call.CallID {
			turn, step = tc.Turn, tc.Step
			break
		}
	}
	log.Append(session.TypeToolProgress, session.ToolProgress{Turn: turn, Step: step, CallID: p.call.CallID,
		Content: []session.Block{session.TextBlock(text)}})
}
