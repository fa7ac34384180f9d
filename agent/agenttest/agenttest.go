// Package agenttest runs real agents on a scripted model for the tests and
// benchmarks of the delegation packages (subagent, workflow, code): the
// runtime, sessions, logs, tools and pipeline are the real ones; only the
// model answers from a Go function of the request.
package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/llm"
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

// Provider is an llm.Provider over a Model.
type Provider struct {
	Model Model
	calls atomic.Int64
}

// Calls is how many model calls were served.
func (p *Provider) Calls() int64 { return p.calls.Load() }

// Stream implements llm.Provider.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		n := p.calls.Add(1)
		r := p.Model(req)
		if r.Hang {
			<-ctx.Done()
			yield(llm.Chunk{}, ctx.Err())
			return
		}
		var raws []string
		idx := 0
		if r.Text != "" {
			t, _ := json.Marshal(r.Text)
			raws = append(raws,
				fmt.Sprintf(`{"type":"block-start","index":%d,"blockType":"text"}`, idx),
				fmt.Sprintf(`{"type":"text-delta","index":%d,"text":%s}`, idx, t),
				fmt.Sprintf(`{"type":"block-end","index":%d,"block":{"type":"text","text":%s}}`, idx, t))
			idx++
		}
		for i, c := range r.Calls {
			a, _ := json.Marshal(c.Args)
			id := fmt.Sprintf("call_%d_%d", n, i)
			raws = append(raws,
				fmt.Sprintf(`{"type":"block-start","index":%d,"blockType":"tool-call"}`, idx),
				fmt.Sprintf(`{"type":"block-end","index":%d,"block":{"type":"tool-call","id":%q,"name":%q,"arguments":%s}}`, idx, id, c.Name, a))
			idx++
		}
		switch {
		case r.Finish == "max-tokens":
			raws = append(raws, `{"type":"finish","reason":{"kind":"max-tokens"}}`)
		case r.Finish == "error":
			raws = append(raws, `{"type":"finish","reason":{"kind":"error","message":"model stopped: boom","code":"BOOM"}}`)
		case len(r.Calls) > 0:
			raws = append(raws, `{"type":"finish","reason":{"kind":"tool-calls"}}`)
		default:
			raws = append(raws, `{"type":"finish","reason":{"kind":"stop"}}`)
		}
		for _, raw := range raws {
			var c llm.Chunk
			if err := c.UnmarshalJSON([]byte(raw)); err != nil {
				yield(llm.Chunk{}, err)
				return
			}
			if ctx.Err() != nil {
				yield(llm.Chunk{}, ctx.Err())
				return
			}
			if !yield(c, nil) {
				return
			}
		}
	}
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
	root := tb.TempDir()
	st, err := jsonl.Open(root)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return build(st, root, m, tools, nil)
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
	p := &Provider{Model: m}
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
