// Package agenttest runs real agents on a scripted model for the tests and
// benchmarks of the delegation packages (subagent, workflow, code): the
// runtime, sessions, logs, tools and pipeline are the real ones; only the
// model answers from a Go function of the request.
package agenttest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
)

// Call is one tool call a scripted reply makes.
type Call struct {
	Name string
	Args string
}

// Reply is the model's answer to one request.
type Reply struct {
	// Text is the answer's text block ("" for none).
	Text string
	// Calls are tool calls (finish "tool-calls").
	Calls []Call
	// Finish overrides the finish kind: "max-tokens", or "error".
	Finish string
	// Hang blocks until the request is cancelled.
	Hang bool
}

// Model answers a request.
type Model func(req *llm.Request) Reply

// LastUser is the text of the request's last user message that has text
// (tool results are skipped).
func LastUser(req *llm.Request) string { return llmtest.LastUser(req) }

// LastIsToolResult reports whether the request's last message carries a
// tool result (the model is called back after its tool calls).
func LastIsToolResult(req *llm.Request) bool { return llmtest.LastIsToolResult(req) }

// Provider is the scripted model (llmtest) over a Model.
type Provider struct {
	*llmtest.Model
}

func newProvider(m Model) *Provider {
	return &Provider{llmtest.New(func(_ context.Context, c llmtest.Call) llmtest.Step { return m(c.Req).step(c.N) })}
}

// step is the reply as the n-th call's stream: its text block, its tool
// calls (ids call_<n>_<i>), and the finish.
func (r Reply) step(n int) llmtest.Step {
	if r.Hang {
		return llmtest.Step{Hold: true}
	}
	var cs []llm.Chunk
	idx := 0
	if r.Text != "" {
		cs = append(cs, llmtest.TextBlock(idx, r.Text)...)
		idx++
	}
	for i, c := range r.Calls {
		b := session.Block{Type: session.BlockToolCall, ID: fmt.Sprintf("call_%d_%d", n, i), Name: c.Name, Arguments: c.Args}
		cs = append(cs,
			llm.Chunk{Type: llm.ChunkBlockStart, Index: idx, BlockType: session.BlockToolCall},
			llm.Chunk{Type: llm.ChunkBlockEnd, Index: idx, Block: &b})
		idx++
	}
	switch {
	case r.Finish == "max-tokens":
		cs = append(cs, llmtest.Finish(llm.FinishMaxTokens))
	case r.Finish == "error":
		cs = append(cs, llm.Chunk{Type: llm.ChunkFinish, Reason: &llm.FinishReason{Kind: llm.FinishError, Message: "model stopped: boom", Code: "BOOM"}})
	case len(r.Calls) > 0:
		cs = append(cs, llmtest.Finish(llm.FinishToolCalls))
	default:
		cs = append(cs, llmtest.Finish(llm.FinishStop))
	}
	return llmtest.Step{Chunks: cs}
}

// Env is a runtime over a JSONL store in a temporary directory.
type Env struct {
	Runtime  *agent.Runtime
	Store    *jsonl.Store
	Root     string
	Provider *Provider
}

// New builds a runtime whose sessions get tools(env), answer from m and
// persist in a JSONL store.
func New(tb testing.TB, m Model, tools func(capabilities.Env) []capabilities.Tool) *Env {
	tb.Helper()
	return NewWith(tb, m, tools, nil)
}

// NewWith is New with the runtime's config adjusted by edit.
func NewWith(tb testing.TB, m Model, tools func(capabilities.Env) []capabilities.Tool, edit func(*agent.Config)) *Env {
	tb.Helper()
	root := tb.TempDir()
	st, err := jsonl.Open(root)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return build(st, root, m, tools, edit)
}

// NewMemory is New without a store: logs stay in memory (benchmarks of
// the agent's own overhead, without the disk).
func NewMemory(tb testing.TB, m Model, tools func(capabilities.Env) []capabilities.Tool) *Env {
	tb.Helper()
	return build(nil, "", m, tools, nil)
}

func build(st *jsonl.Store, root string, m Model, tools func(capabilities.Env) []capabilities.Tool, edit func(*agent.Config)) *Env {
	p := newProvider(m)
	var n atomic.Int64
	var store session.Store
	if st != nil {
		store = st
	}
	cfg := agent.Config{
		Model:    "test-model",
		Provider: p,
		Store:    store,
		Clock:    func() int64 { return n.Add(1) },
		NewID:    session.NewID,
		Tools: func(env capabilities.Env) *capabilities.Registry {
			return capabilities.NewRegistry(tools(env)...)
		},
		Log: zerolog.Nop(),
	}
	if edit != nil {
		edit(&cfg)
	}
	rt := agent.NewRuntime(cfg)
	return &Env{Runtime: rt, Store: st, Root: root, Provider: p}
}

// Session starts a top-level session in a fresh temporary cwd.
func (e *Env) Session(tb testing.TB) *agent.Session {
	tb.Helper()
	s, err := e.Runtime.NewSession(context.Background(), agent.SessionOptions{Cwd: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// Children returns the stored headers of s's children.
func (e *Env) Children(tb testing.TB, parent string) []session.Header {
	tb.Helper()
	hs, err := e.Store.List(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	var out []session.Header
	for _, h := range hs {
		if h.ParentSession == parent {
			out = append(out, h)
		}
	}
	return out
}
