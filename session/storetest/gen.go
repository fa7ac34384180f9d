package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/dsh-acp/dsh-acp/session"
)

// BaseTime is the epoch-ms time of the first generated event; event k of a
// generated log has time BaseTime+k.
const BaseTime int64 = 1_760_000_000_000

// Gen builds events with contiguous seqs, the way session.Log.Append would
// (surface types get surfaceOp "append").
type Gen struct {
	// Events are the events generated so far.
	Events []session.Event
	next   int
	taken  int
}

// NewGen returns a generator whose first event has seq first.
func NewGen(first int) *Gen { return &Gen{next: first} }

// Add appends one event with the given payload (marshalled unless it is a
// json.RawMessage) and sourceEventSeqs, returning its seq.
func (g *Gen) Add(typ string, data any, sourceSeqs []int) int {
	raw, ok := data.(json.RawMessage)
	if !ok {
		raw = session.Data(data)
	}
	ev := session.Event{Type: typ, Seq: g.next, Time: BaseTime + int64(g.next), Data: raw, SourceEventSeqs: sourceSeqs}
	if session.IsSurface(typ) {
		ev.SurfaceOp = session.SurfaceAppend
	}
	g.Events = append(g.Events, ev)
	g.next++
	return ev.Seq
}

// Next returns the seq the next generated event gets.
func (g *Gen) Next() int { return g.next }

// Take returns the events generated since the last Take (or since creation).
func (g *Gen) Take() []session.Event {
	out := g.Events[g.taken:]
	g.taken = len(g.Events)
	return out
}

// TurnStart opens turn n with a user prompt text.
func (g *Gen) TurnStart(turn int, prompt string) {
	g.Add(session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}}, nil)
	g.Add(session.TypeUserMessage, session.Message{Content: []session.Block{session.TextBlock(prompt)}, Source: session.UserSource}, nil)
}

// StepWithTool writes step step of turn: step/start, a request/header on
// step 1, chunks text deltas and an assistant/message announcing callIDs.
// The first called of those calls get a tool/call, and the first answered of
// these a tool/result. The step is closed by step/end when closeStep is set.
func (g *Gen) StepWithTool(turn, step, chunks int, callIDs []string, called, answered int, closeStep bool) {
	g.Add(session.TypeStepStart, session.StepRef{Turn: turn, Step: step}, nil)
	if step == 1 {
		g.Add(session.TypeRequestHeader, json.RawMessage(`{"header":{"config":{"model":"deepseek-v4-flash"},"system":"Be <brief> & exact.","tools":[{"name":"bash","description":"Run a command","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}]},"reason":"initial"}`), nil)
	}
	var chunkSeqs []int
	for i := 0; i < chunks; i++ {
		c := fmt.Sprintf(`{"type":"text-delta","index":0,"text":"part %d é <x> &amp;"}`, i)
		chunkSeqs = append(chunkSeqs, g.Add(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: step, Chunk: json.RawMessage(c)}, nil))
	}
	content := []session.Block{session.TextBlock("Running it now.")}
	for _, id := range callIDs {
		content = append(content, session.Block{Type: session.BlockToolCall, ID: id, Name: "bash", Arguments: `{"command":"echo \"hi\" && ls"}`})
	}
	g.Add(session.TypeAssistantMessage, session.AssistantMessage{Turn: turn, Step: step, Content: content, Usage: json.RawMessage(`{"inputTokens":12,"outputTokens":7}`)}, chunkSeqs)
	for i, id := range callIDs[:called] {
		cs := g.Add(session.TypeToolCall, session.ToolCall{Turn: turn, Step: step, CallID: id, Name: "bash", Arguments: `{"command":"echo \"hi\" && ls"}`}, nil)
		if i < answered {
			g.Add(session.TypeToolResult, session.ToolResult{Turn: turn, Step: step, CallID: id, Content: []session.Block{session.TextBlock("hi\n")}, Meta: json.RawMessage(`{"exitCode":0}`)}, []int{cs})
		}
	}
	if closeStep {
		g.Add(session.TypeStepEnd, session.StepRef{Turn: turn, Step: step}, nil)
	}
}

// TurnEnd closes turn n as completed.
func (g *Gen) TurnEnd(turn int) {
	g.Add(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: session.EndReason{Kind: session.EndCompleted}}, nil)
}

// Turn writes a complete turn: prompt, a step with chunks text deltas and
// one answered tool call, a final step without tools, and the turn/end. It
// produces chunks+12 events.
func (g *Gen) Turn(turn, chunks int) {
	g.TurnStart(turn, fmt.Sprintf("prompt %d: list <files> & say \"hi\"", turn))
	g.StepWithTool(turn, 1, chunks, []string{fmt.Sprintf("call-%d", turn)}, 1, 1, true)
	g.Add(session.TypeStepStart, session.StepRef{Turn: turn, Step: 2}, nil)
	g.Add(session.TypeAssistantMessage, session.AssistantMessage{Turn: turn, Step: 2, Content: []session.Block{session.TextBlock("Done.")}}, nil)
	g.Add(session.TypeStepEnd, session.StepRef{Turn: turn, Step: 2}, nil)
	g.TurnEnd(turn)
}

// Lines marshals events one JSON line each, for byte comparisons.
func Lines(t testing.TB, events []session.Event) []string {
	t.Helper()
	out := make([]string, len(events))
	for i, e := range events {
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("marshal event %d: %v", i, err)
		}
		out[i] = string(b)
	}
	return out
}

// BenchAppendTurn measures appending one 30-event turn batch (18 chunks and
// 12 other events) to a growing session.
func BenchAppendTurn(b *testing.B, open func(b *testing.B) session.Store) {
	st := open(b)
	b.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	h := session.Header{ID: "bench-session", CreatedAt: BaseTime, Cwd: "/work/bench"}
	g := NewGen(0)
	batches := make([][]session.Event, 0, b.N)
	for i := 0; i < b.N; i++ {
		g.Turn(i+1, 18)
		batches = append(batches, g.Take())
	}
	if len(batches) > 0 && len(batches[0]) != 30 {
		b.Fatalf("turn batch has %d events, want 30", len(batches[0]))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := st.Append(ctx, h, batches[i]); err != nil {
			b.Fatal(err)
		}
	}
}
