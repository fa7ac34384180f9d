package agent

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// hugeArgs streams a write call whose arguments never end (64 KiB deltas
// up to total bytes), then answers in text on the next call.
type hugeArgs struct {
	*llmtest.Model
	total, sent int
}

func newHugeArgs(total int) *hugeArgs {
	h := &hugeArgs{total: total}
	h.Model = llmtest.New(func(_ context.Context, c llmtest.Call) llmtest.Step {
		if c.N > 1 {
			return llmtest.Step{Chunks: []llm.Chunk{text(0, "ok, smaller then"), finish(llm.FinishStop)}}
		}
		name := "write"
		return llmtest.Step{
			Chunks: []llm.Chunk{
				{Type: llm.ChunkBlockStart, Index: 0, BlockType: "tool-call"},
				{Type: llm.ChunkToolCallDelta, Index: 0, ID: "big", Name: &name, ArgumentsDelta: `{"file_path":"x","content":"`},
			},
			Seq: func(yield func(llm.Chunk) bool) {
				piece := strings.Repeat("a", 64<<10)
				for h.sent < h.total {
					h.sent += len(piece)
					if !yield(llm.Chunk{Type: llm.ChunkToolCallDelta, Index: 0, ID: "big", ArgumentsDelta: piece}) {
						return
					}
				}
				yield(finish(llm.FinishToolCalls))
			},
		}
	})
	return h
}

// ranTool records whether it ran.
type ranTool struct{ ran *bool }

func (ranTool) Name() string                 { return "write" }
func (ranTool) Description() string          { return "w" }
func (ranTool) Schema() *capabilities.Schema { return capabilities.Object() }
func (ranTool) Traits() capabilities.Traits  { return capabilities.Traits{} }
func (t ranTool) Run(context.Context, *capabilities.Call) (capabilities.Result, error) {
	*t.ran = true
	return capabilities.TextResult("written"), nil
}

func TestOversizedToolArgumentsAreCutAndRefused(t *testing.T) {
	const limit = 1 << 20
	p := newHugeArgs(64 << 20)
	ran := false
	var now int64
	rt := NewRuntime(Config{Model: "m", Provider: p, Clock: func() int64 { now++; return now }, NewID: func() string { return "s" },
		Tools:           func(capabilities.Env) *capabilities.Registry { return capabilities.NewRegistry(ranTool{&ran}) },
		Log:             zerolog.Nop(),
		MaxToolArgBytes: limit,
	})
	s, _ := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	end := s.Prompt(context.Background(), "write a huge file")
	runtime.ReadMemStats(&after)
	require.Equal(t, session.EndCompleted, end.Kind)
	require.False(t, ran, "the cut call never runs")
	require.Less(t, p.sent, 2*limit, "the stream was dropped at the cap, not read to its end")
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a call cut at %d bytes allocated %.1f MiB", limit, float64(alloc)/(1<<20))
	require.Less(t, alloc, uint64(16*limit), "memory is bounded by the cap, not by what the model sends")

	var res session.ToolResult
	for _, e := range s.Log().Events() {
		if e.Type == session.TypeToolResult {
			require.NoError(t, e.Decode(&res))
		}
	}
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].Text, "cut off")
	// The next request carries the call with empty arguments and its result.
	require.Len(t, p.Requests(), 2)
	msgs := p.Requests()[1].Messages
	require.Equal(t, "{}", msgs[1].Content[0].Arguments)
	require.NoError(t, checkHistory(deriveHistory(s.Log().Events())))
}
