package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// benchUpdate is a typical agent_message_chunk notification.
var benchUpdate = SessionNotification{
	SessionID: "0b6c2bc4-6c7f-4c39-8e3b-0f1c7e1f2a3b",
	Update:    ContentChunk{"agent_message_chunk", TextContent{"text", "Here is the <b>fix</b> & a short explanation of it."}},
}

// BenchmarkEncodeSessionUpdate measures encoding one session/update the
// way the server does: jsonx.Marshal(notificationFrame{…}) ("marshal"),
// and the whole Server.notify path including the framed write ("notify").
// SetBytes is the frame size with its newline, so MB/s is wire throughput.
func BenchmarkEncodeSessionUpdate(b *testing.B) {
	frame, err := jsonx.Marshal(notificationFrame{"2.0", "session/update", benchUpdate})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("marshal", func(b *testing.B) {
		b.SetBytes(int64(len(frame) + 1))
		b.ReportAllocs()
		for b.Loop() {
			out, err := jsonx.Marshal(notificationFrame{"2.0", "session/update", benchUpdate})
			if err != nil || len(out) != len(frame) {
				b.Fatalf("encode: %v (%d bytes)", err, len(out))
			}
		}
		b.ReportMetric(float64(len(frame)+1), "frame-bytes")
	})
	b.Run("notify", func(b *testing.B) {
		var w countingWriter
		s := NewServer(nil, Options{}, zerolog.Nop())
		s.stream = NewLineStream(bytes.NewReader(nil), &w, nil, zerolog.Nop())
		b.SetBytes(int64(len(frame) + 1))
		b.ReportAllocs()
		for b.Loop() {
			s.notify("session/update", benchUpdate)
		}
		if w.n.Load() != int64(b.N)*int64(len(frame)+1) {
			b.Fatalf("wrote %d bytes for %d frames of %d", w.n.Load(), b.N, len(frame)+1)
		}
	})
}

type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// newChunkProvider is a model that streams n text deltas and a finish on
// every call.
func newChunkProvider(n int) *llmtest.Model {
	var chunks []llm.Chunk
	for i := range n {
		chunks = append(chunks, llmtest.Text(0, fmt.Sprintf("tok%d <&> ", i)))
	}
	chunks = append(chunks, llmtest.Finish(llm.FinishStop))
	return llmtest.New(func(context.Context, llmtest.Call) llmtest.Step { return llmtest.Step{Chunks: chunks} }).Unrecorded()
}

// BenchmarkPromptChunkThroughput measures the per-chunk cost of a streamed
// turn end to end: the real runtime appends one assistant/chunk per
// provider chunk, the bridge presents it and writes the session/update to
// the output pipe, which acpclient's fast path drains. Each iteration is one prompt of
// chunksPerPrompt chunks in a fresh session (session/new is not timed).
func BenchmarkPromptChunkThroughput(b *testing.B) {
	const chunksPerPrompt = 256
	var ids atomic.Int64
	rt := agent.NewRuntime(agent.Config{
		Model:    "bench",
		Provider: newChunkProvider(chunksPerPrompt),
		Clock:    FakeClock(),
		NewID:    func() string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", ids.Add(1)) },
		Log:      zerolog.Nop(),
	})
	srv := NewServer(FromRuntime(rt), Options{AgentName: "dsh-acp", AgentVersion: "bench"}, zerolog.Nop())
	// The client's fast path counts the bytes and the updates, and hands
	// only the responses on to their calls.
	var outBytes, updates atomic.Int64
	respPrefix := []byte(`{"jsonrpc":"2.0","id":`)
	c := acpclient.Serve(srv.Serve, acpclient.Options{NoTranscript: true, OnReceive: func(line []byte, _ time.Time) bool {
		outBytes.Add(int64(len(line)) + 1)
		if bytes.HasPrefix(line, respPrefix) {
			return false
		}
		updates.Add(1)
		return true
	}})
	call := func(method string, params any) json.RawMessage {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := c.Call(ctx, method, params)
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	defer func() {
		_ = c.CloseWrite()
		select {
		case <-c.Stopped():
		case <-time.After(WaitFor):
			b.Error("Serve did not return")
		}
	}()

	var timedBytes, timedUpdates int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var nr struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(call("session/new", map[string]any{"cwd": "/bench", "mcpServers": []any{}}), &nr); err != nil || nr.SessionID == "" {
			b.Fatalf("session/new: %v", err)
		}
		bytes0, upd0 := outBytes.Load(), updates.Load()
		b.StartTimer()
		res := call("session/prompt", json.RawMessage(`{"sessionId":`+JSONQuote(nr.SessionID)+`,"prompt":[{"type":"text","text":"go"}]}`))
		if !bytes.Contains(res, []byte(`"stopReason":"end_turn"`)) {
			b.Fatalf("prompt: %s", res)
		}
		b.StopTimer()
		timedBytes += outBytes.Load() - bytes0
		timedUpdates += updates.Load() - upd0
		b.StartTimer()
	}
	b.StopTimer()
	chunks := float64(b.N) * chunksPerPrompt
	if timedUpdates != int64(b.N)*chunksPerPrompt {
		b.Fatalf("%d updates for %d chunks", timedUpdates, int64(chunks))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/chunks, "ns/chunk")
	b.ReportMetric(float64(timedBytes)/chunks, "B/chunk")
}
