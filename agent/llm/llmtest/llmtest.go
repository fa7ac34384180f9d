// Package llmtest is the scripted model of the module's tests and
// benchmarks: an [llm.Provider] that answers each model call from a Go
// function of the call (or from a fixed script), records every request,
// and streams real [llm.Chunk] values through the same iterator contract
// the live providers keep (stop when the consumer stops; a cancelled
// context ends the stream with its error).
//
// Tests judge the agent by what reached the model: [Model.Requests] holds
// every request in call order, so a test reads the messages, tools and
// system prompt the loop actually sent.
package llmtest

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
)

// Call is one model call as the script sees it.
type Call struct {
	// N is the call's number, from 1, in the order calls began.
	N int
	// Req is the request the agent sent.
	Req *llm.Request
}

// Step is what one model call streams.
type Step struct {
	// Before runs first, with the call's context (a rendezvous, a gate a
	// test holds the step at).
	Before func(ctx context.Context)
	// Chunks are streamed in order.
	Chunks []llm.Chunk
	// Seq, when set, is streamed after Chunks: for streams too long to
	// hold in memory, or produced as they go.
	Seq iter.Seq[llm.Chunk]
	// Hold, after the chunks, blocks until the call is cancelled; the
	// stream then ends with the context's error, or with Err when set.
	Hold bool
	// Err, when set, ends the stream after the chunks.
	Err error
	// AbortAsFinish ends a cancelled call with a finish of kind aborted
	// instead of the context's error.
	AbortAsFinish bool
}

// Func answers one model call.
type Func func(ctx context.Context, c Call) Step

// Model is a scripted llm.Provider. It is safe for concurrent use.
type Model struct {
	answer Func
	forget bool

	mu   sync.Mutex
	n    int
	reqs []*llm.Request
	ctxs []context.Context
}

// New returns a model that answers every call with f.
func New(f Func) *Model { return &Model{answer: f} }

// Unrecorded makes m keep no requests (for benchmarks, whose iterations
// would otherwise hold every request) and returns it.
func (m *Model) Unrecorded() *Model {
	m.forget = true
	return m
}

// ErrExhausted is the error a [Script] model ends a call with once its
// steps are used up.
var ErrExhausted = &llm.Error{Message: "script exhausted"}

// Script returns a model whose n-th call streams steps[n-1]; a call after
// the last step fails with [ErrExhausted].
func Script(steps ...Step) *Model {
	return New(func(_ context.Context, c Call) Step {
		if c.N > len(steps) {
			return Step{Err: ErrExhausted}
		}
		return steps[c.N-1]
	})
}

// Stream implements llm.Provider. The call is counted and recorded when
// Stream is called, as the live providers commit to a request then.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	m.mu.Lock()
	m.n++
	c := Call{N: m.n, Req: req}
	if !m.forget {
		m.reqs = append(m.reqs, req)
		m.ctxs = append(m.ctxs, ctx)
	}
	m.mu.Unlock()
	return func(yield func(llm.Chunk, error) bool) {
		s := m.answer(ctx, c)
		if s.Before != nil {
			s.Before(ctx)
		}
		// emit streams one chunk unless the call was cancelled, which ends
		// the stream as a live provider ends it.
		emit := func(ch llm.Chunk) bool {
			if ctx.Err() != nil {
				if s.AbortAsFinish {
					yield(Finish(llm.FinishAborted), nil)
				} else {
					yield(llm.Chunk{}, ctx.Err())
				}
				return false
			}
			return yield(ch, nil)
		}
		for _, ch := range s.Chunks {
			if !emit(ch) {
				return
			}
		}
		if s.Seq != nil {
			for ch := range s.Seq {
				if !emit(ch) {
					return
				}
			}
		}
		if s.Hold {
			<-ctx.Done()
			switch {
			case s.Err != nil:
				yield(llm.Chunk{}, s.Err)
			case s.AbortAsFinish:
				yield(Finish(llm.FinishAborted), nil)
			default:
				yield(llm.Chunk{}, ctx.Err())
			}
			return
		}
		if s.Err != nil {
			yield(llm.Chunk{}, s.Err)
		}
	}
}

// Calls is how many model calls began.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// Requests returns every request so far, in call order.
func (m *Model) Requests() []*llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*llm.Request(nil), m.reqs...)
}

// Contexts returns every call's context so far, in call order.
func (m *Model) Contexts() []context.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]context.Context(nil), m.ctxs...)
}

// RequestsFor returns the requests made for one session.
func (m *Model) RequestsFor(sessionID string) []*llm.Request {
	var out []*llm.Request
	for _, r := range m.Requests() {
		if r.SessionID == sessionID {
			out = append(out, r)
		}
	}
	return out
}

// Text is a text delta of the block at index.
func Text(index int, s string) llm.Chunk {
	return llm.Chunk{Type: llm.ChunkTextDelta, Index: index, Text: s}
}

// Reasoning is a reasoning delta of the block at index.
func Reasoning(index int, s string) llm.Chunk {
	return llm.Chunk{Type: llm.ChunkReasoningDelta, Index: index, Text: s}
}

// Finish ends a step with kind.
func Finish(kind llm.FinishKind) llm.Chunk {
	return llm.Chunk{Type: llm.ChunkFinish, Reason: &llm.FinishReason{Kind: kind}}
}

// Usage reports the step's token counts.
func Usage(in, out int) llm.Chunk {
	return llm.Chunk{Type: llm.ChunkUsage, Usage: &llm.Usage{InputTokens: in, OutputTokens: out}}
}

// TextBlock is a whole text block at index: its start, one delta, its end.
func TextBlock(index int, s string) []llm.Chunk {
	return []llm.Chunk{
		{Type: llm.ChunkBlockStart, Index: index, BlockType: session.BlockText},
		{Type: llm.ChunkTextDelta, Index: index, Text: s},
		{Type: llm.ChunkBlockEnd, Index: index, Block: &session.Block{Type: session.BlockText, Text: s}},
	}
}

// ToolCall is a whole tool-call block at index, its arguments in one
// delta.
func ToolCall(index int, id, name, args string) []llm.Chunk {
	n := name
	b := session.Block{Type: session.BlockToolCall, ID: id, Name: name, Arguments: args}
	return []llm.Chunk{
		{Type: llm.ChunkBlockStart, Index: index, BlockType: session.BlockToolCall},
		{Type: llm.ChunkToolCallDelta, Index: index, ID: id, Name: &n, ArgumentsDelta: args},
		{Type: llm.ChunkBlockEnd, Index: index, Block: &b},
	}
}

// Answer is a step that answers text and stops.
func Answer(text string) Step {
	return Step{Chunks: append(TextBlock(0, text), Finish(llm.FinishStop))}
}

// Tool is one tool call of a [Calls] step.
type Tool struct {
	Name string
	Args string
}

// Calls is a step that makes the tool calls, with the ids idPrefix0,
// idPrefix1, …, and finishes with tool-calls.
func Calls(idPrefix string, calls ...Tool) Step {
	var cs []llm.Chunk
	for i, c := range calls {
		cs = append(cs, ToolCall(i, fmt.Sprintf("%s%d", idPrefix, i), c.Name, c.Args)...)
	}
	return Step{Chunks: append(cs, Finish(llm.FinishToolCalls))}
}

// LastUser is the text of the request's last user message that has text
// (tool results are skipped).
func LastUser(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		s := ""
		for _, b := range m.Content {
			if b.Type == session.BlockText {
				s += b.Text
			}
		}
		if s != "" {
			return s
		}
	}
	return ""
}

// LastIsToolResult reports whether the request's last message carries a
// tool result (the model is called back after its tool calls).
func LastIsToolResult(req *llm.Request) bool {
	if len(req.Messages) == 0 {
		return false
	}
	m := req.Messages[len(req.Messages)-1]
	for _, b := range m.Content {
		if b.Type == session.BlockToolResult {
			return true
		}
	}
	return false
}

// ToolNames are the names of the tools the request offered, in order.
func ToolNames(req *llm.Request) []string {
	out := []string{}
	for _, t := range req.Tools {
		out = append(out, t.Name)
	}
	return out
}
