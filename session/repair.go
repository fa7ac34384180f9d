package session

import (
	"encoding/json"
	"fmt"
)

// InterruptedText is the result text of a tool call cut off by a crash.
const InterruptedText = "Tool call interrupted by a crash; no result was recorded."

// RepairClosers returns the events that close a turn left open by a crash
// (session-log contract § 6, crash repair): an interrupted tool/result for
// every announced call of the open step without a result, the step/end, and
// turn/end {kind: interrupted}. It returns nil when no turn is open. The
// closers continue the seqs of events and carry the last event's time.
func RepairClosers(events []Event) []Event {
	openTurn := -1
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == TypeTurnEnd {
			break
		}
		if events[i].Type == TypeTurnStart {
			openTurn = i
			break
		}
	}
	if openTurn < 0 {
		return nil
	}
	var ts TurnStart
	_ = events[openTurn].Decode(&ts)
	last := events[len(events)-1]
	seq := last.Seq + 1
	var out []Event
	add := func(typ string, data any) *Event {
		out = append(out, Event{Type: typ, Seq: seq, Time: last.Time, Data: Data(data)})
		seq++
		return &out[len(out)-1]
	}

	step, stepOpen := 0, false
	var announced []Block
	callSeq := map[string]int{}
	answered := map[string]bool{}
	for _, e := range events[openTurn+1:] {
		switch e.Type {
		case TypeStepStart:
			var s StepRef
			_ = e.Decode(&s)
			step, stepOpen = s.Step, true
			announced = nil
			callSeq = map[string]int{}
			answered = map[string]bool{}
		case TypeStepEnd:
			stepOpen = false
		case TypeAssistantMessage:
			var m AssistantMessage
			_ = e.Decode(&m)
			for _, b := range m.Content {
				if b.Type == BlockToolCall {
					announced = append(announced, b)
				}
			}
		case TypeToolCall:
			var c ToolCall
			_ = e.Decode(&c)
			callSeq[c.CallID] = e.Seq
		case TypeToolResult:
			var r struct {
				CallID string `json:"callId"`
			}
			_ = json.Unmarshal(e.Data, &r)
			answered[r.CallID] = true
		}
	}
	if stepOpen {
		for _, b := range announced {
			if answered[b.ID] {
				continue
			}
			ev := add(TypeToolResult, ToolResult{
				Turn: ts.Turn, Step: step, CallID: b.ID,
				Content: []Block{TextBlock(InterruptedText)}, IsError: true,
				Error: &ErrorInfo{Name: "InterruptedError", Code: "interrupted"},
			})
			ev.SurfaceOp = SurfaceAppend
			ev.SurfaceOpFirst = true
			if s, ok := callSeq[b.ID]; ok {
				ev.SourceEventSeqs = []int{s}
			}
		}
		add(TypeStepEnd, StepRef{Turn: ts.Turn, Step: step})
	}
	add(TypeTurnEnd, TurnEnd{Turn: ts.Turn, Reason: EndReason{Kind: EndInterrupted}})
	return out
}

// Candidate is one stored event line as a store read it: the parsed event,
// or OK false for a line (row) that does not parse or is torn.
type Candidate struct {
	Event Event
	OK    bool
}

// CorruptError is a session log that cannot be loaded; its text is the
// contract's exact message.
type CorruptError struct{ Msg string }

func (e *CorruptError) Error() string { return e.Msg }

// CommittedPrefix returns how many leading candidates form the kept prefix:
// parseable events whose seq equals their index. A bad line after the last
// parseable turn/end ends the prefix (a torn tail, dropped on load); one at
// or before it is fatal. Line numbers count the header as line 0.
func CommittedPrefix(c []Candidate) (int, error) {
	events, ok := make([]Event, len(c)), make([]bool, len(c))
	for i := range c {
		events[i], ok[i] = c[i].Event, c[i].OK
	}
	return CommittedPrefixOf(events, ok)
}

// CommittedPrefixOf is CommittedPrefix over the parsed events of every
// line and whether each line parsed (a store reading a whole file keeps
// one slice of events, not a slice of candidates and a copy).
func CommittedPrefixOf(events []Event, ok []bool) (int, error) {
	lastEnd := -1
	for i := range events {
		if ok[i] && events[i].Type == TypeTurnEnd {
			lastEnd = i
		}
	}
	for i := range events {
		line := i + 1
		if !ok[i] {
			if i <= lastEnd {
				return 0, &CorruptError{fmt.Sprintf("corrupt session log: unparsable committed event at line %d", line)}
			}
			return i, nil
		}
		if events[i].Seq != i {
			if i <= lastEnd {
				return 0, &CorruptError{fmt.Sprintf("corrupt session log: seq gap in committed region at line %d (expected %d, got %d)", line, i, events[i].Seq)}
			}
			return i, nil
		}
	}
	return len(events), nil
}
