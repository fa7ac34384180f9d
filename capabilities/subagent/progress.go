package subagent

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// Card limits of the progress view.
const (
	progressCalls = 6   // the child's latest tool calls shown
	progressTail  = 400 // characters of the child's latest answer shown
)

// Card is a parent's view of its delegated work while it runs: it logs a
// tool/progress event (session.TypeToolProgress) into the parent's log
// whenever the shown content changes, so the editor's card for the call
// shows what the children do — their current tool calls and the tail of
// their answer — and a loaded session shows the same. Upstream shows
// nothing; the default composition mounts it.
type Card struct {
	mu    sync.Mutex
	calls map[string]*cardState // by parent call id
}

type cardState struct {
	turn, step int
	lines      []string // the child's tool calls, latest last
	status     map[string]int
	answer     string
	last       string
}

// Child implements Progress.
func (c *Card) Child(call *capabilities.Call, childID string, e session.Event) {
	if call.Session == nil || call.Session.Log() == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]*cardState{}
	}
	st, ok := c.calls[call.CallID]
	if !ok {
		st = &cardState{status: map[string]int{}}
		st.turn, st.step = session.CallRef(call.Session.Log().Events(), call.CallID)
		c.calls[call.CallID] = st
	}
	if !st.update(e) {
		return
	}
	text := st.render()
	if text == st.last {
		return
	}
	st.last = text
	call.Session.Log().Append(session.TypeToolProgress, session.ToolProgress{Turn: st.turn, Step: st.step, CallID: call.CallID,
		Content: []session.Block{session.TextBlock(text)}})
}

// Done forgets a finished call.
func (c *Card) Done(callID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.calls, callID)
}

// update folds one child event; it reports whether the view may change.
func (st *cardState) update(e session.Event) bool {
	switch e.Type {
	case session.TypeToolCall:
		var tc session.ToolCall
		if e.Decode(&tc) != nil {
			return false
		}
		st.lines = append(st.lines, "⋯ "+callLine(tc))
		st.status[tc.CallID] = len(st.lines) - 1
		if len(st.lines) > 64 {
			st.lines = st.lines[1:]
			for k, v := range st.status {
				st.status[k] = v - 1
			}
		}
		return true
	case session.TypeToolResult:
		var r session.ToolResult
		if e.Decode(&r) != nil {
			return false
		}
		if i, ok := st.status[r.CallID]; ok && i >= 0 && i < len(st.lines) {
			mark := "✓ "
			if r.IsError {
				mark = "✗ "
			}
			st.lines[i] = mark + strings.TrimPrefix(st.lines[i], "⋯ ")
		}
		return true
	case session.TypeAssistantMessage:
		var m session.AssistantMessage
		if e.Decode(&m) != nil {
			return false
		}
		var b strings.Builder
		for _, blk := range m.Content {
			if blk.Type == session.BlockText {
				b.WriteString(blk.Text)
			}
		}
		if b.Len() > 0 {
			st.answer = b.String()
			return true
		}
	}
	return false
}

// render is the card text: the latest tool calls, then the answer's tail.
func (st *cardState) render() string {
	var b strings.Builder
	lines := st.lines
	if len(lines) > progressCalls {
		fmt.Fprintf(&b, "… %d earlier tool calls\n", len(lines)-progressCalls)
		lines = lines[len(lines)-progressCalls:]
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if st.answer != "" {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(tail(st.answer, progressTail))
	}
	return strings.TrimRight(b.String(), "\n")
}

// callLine is one child tool call: its name and its main argument.
func callLine(tc session.ToolCall) string {
	var args map[string]any
	_ = json.Unmarshal([]byte(tc.Arguments), &args)
	for _, k := range []string{"command", "path", "file_path", "pattern", "description", "url", "query"} {
		if s, ok := args[k].(string); ok && s != "" {
			return tc.Name + ": " + tail(firstLine(s), 80)
		}
	}
	return tc.Name
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// tail keeps the last n characters of s ("…" marks a cut).
func tail(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n:])
}
