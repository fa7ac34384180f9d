package acp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
	"github.com/dsh-acp/dsh-acp/session/storetest"
)

// loadClient serves rt's bridge to a client that counts the session/update
// notifications it receives and keeps their text.
type loadClient struct {
	c       *acpclient.Conn
	updates atomic.Int64
	text    atomic.Pointer[strings.Builder]
}

func newLoadClient(tb testing.TB, store session.Store, merge bool) *loadClient {
	rt := agent.NewRuntime(agent.Config{Model: "m", Provider: newChunkProvider(0), Store: store, Clock: FakeClock(),
		NewID: func() string { return "unused" }, Log: zerolog.Nop()})
	srv := NewServer(FromRuntime(rt), Options{Features: Features{Lifecycle: true, MergeReplayChunks: merge}, AgentName: "dsh-acp", AgentVersion: "test"}, zerolog.Nop())
	lc := &loadClient{}
	lc.text.Store(&strings.Builder{})
	respPrefix := []byte(`{"jsonrpc":"2.0","id":`)
	lc.c = acpclient.Serve(srv.Serve, acpclient.Options{NoTranscript: true, OnReceive: func(line []byte, _ time.Time) bool {
		if bytes.HasPrefix(line, respPrefix) {
			return false
		}
		lc.updates.Add(1)
		var n struct {
			Params struct {
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
					Content       struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &n) == nil && n.Params.Update.SessionUpdate == string(UpdateAgentMessageChunk) {
			lc.text.Load().WriteString(n.Params.Update.Content.Text)
		}
		return true
	}})
	tb.Cleanup(func() {
		_ = lc.c.CloseWrite()
		<-lc.c.Stopped()
	})
	return lc
}

func (lc *loadClient) call(tb testing.TB, method string, params any) json.RawMessage {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := lc.c.Call(ctx, method, params)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// storeTurns writes a session of turns turns, each one tool step and an
// answer of chunks text chunks, straight into store.
func storeTurns(tb testing.TB, store session.Store, id, cwd string, turns, chunks int) {
	g := storetest.NewGen(0)
	for t := 1; t <= turns; t++ {
		g.Turn(t, chunks)
		if t%50 == 0 || t == turns {
			if err := store.Append(context.Background(), session.Header{ID: id, Cwd: cwd}, g.Take()); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if o, ok := store.(session.Owner); ok {
		if err := o.Release(id); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestLoadMergesChunks: with MergeReplayChunks a loaded message's chunks
// reach the editor as one update, with the same text; without it (the
// upstream compositions) every chunk is its own update.
func TestLoadMergesChunks(t *testing.T) {
	dir, cwd := t.TempDir(), t.TempDir()
	store, err := jsonl.Open(dir)
	require.NoError(t, err)
	defer store.Close()
	storeTurns(t, store, "s", cwd, 3, 40)
	load := func(merge bool) (int64, string) {
		lc := newLoadClient(t, store, merge)
		lc.call(t, "initialize", map[string]any{"protocolVersion": 1})
		lc.call(t, "session/load", map[string]any{"sessionId": "s", "cwd": cwd, "mcpServers": []any{}})
		n, text := lc.updates.Load(), lc.text.Load().String()
		lc.call(t, "session/close", map[string]any{"sessionId": "s"})
		require.NoError(t, store.Release("s"))
		return n, text
	}
	each, eachText := load(false)
	merged, mergedText := load(true)
	require.Equal(t, eachText, mergedText, "the same text")
	require.Contains(t, mergedText, "part 39")
	require.Equal(t, each-merged, int64(3*39), "each message's 40 chunks are one update")
}

// loadRig stores session "s" of turns turns with chunks-chunk answers,
// and others one-turn sessions besides, in a JSONL store, and returns an
// initialized client over it (merged replay) and the sessions' cwd.
func loadRig(b *testing.B, turns, chunks, others int) (*loadClient, string) {
	dir, cwd := b.TempDir(), b.TempDir()
	store, err := jsonl.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	storeTurns(b, store, "s", cwd, turns, chunks)
	for i := range others {
		storeTurns(b, store, fmt.Sprintf("o%04d", i), cwd, 1, 1)
	}
	lc := newLoadClient(b, store, true)
	lc.call(b, "initialize", map[string]any{"protocolVersion": 1})
	return lc, cwd
}

// BenchmarkLoad loads a stored session of 100 and of 1,000 turns, each
// with a 100-chunk answer, through session/load (the store's read and
// repair, the resumed session, the replay to the client), and fails when
// the 1,000-turn load takes more than 150 ms (median, CPU time), or more
// than 12× the 100-turn load of the same run (a load must cost what the
// log holds, no more).
func BenchmarkLoad(b *testing.B) {
	costs := map[int]time.Duration{}
	for _, turns := range []int{100, 1000} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			lc, cwd := loadRig(b, turns, 100, 0)
			var wall, cpu []time.Duration
			var updates int64
			for b.Loop() {
				lc.updates.Store(0)
				t0, c0 := time.Now(), processCPU()
				lc.call(b, "session/load", map[string]any{"sessionId": "s", "cwd": cwd, "mcpServers": []any{}})
				wall, cpu = append(wall, time.Since(t0)), append(cpu, processCPU()-c0)
				updates = lc.updates.Load()
				lc.call(b, "session/close", map[string]any{"sessionId": "s"})
			}
			slices.Sort(wall)
			slices.Sort(cpu)
			b.ReportMetric(float64(wall[len(wall)/2].Microseconds())/1000, "ms-load")
			b.ReportMetric(float64(cpu[len(cpu)/2].Microseconds())/1000, "ms-cpu/load")
			b.ReportMetric(float64(updates), "updates/load")
			// Judged by the CPU the load takes (the process and its
			// client: other processes on the machine do not change it),
			// by wall time where that is unknown.
			cost := cmp.Or(cpu[len(cpu)/2], wall[len(wall)/2])
			costs[turns] = cost
			if turns == 1000 && cost > 150*time.Millisecond {
				b.Errorf("loading a 1,000-turn session took %v; the target is 150 ms", cost)
			}
			if c100 := costs[100]; turns == 1000 && c100 > 0 {
				ratio := float64(cost) / float64(c100)
				b.ReportMetric(ratio, "load-1000/100")
				if ratio > 12 {
					b.Errorf("loading 1,000 turns took %v, %.1f× loading 100 (%v); the target is linear (≤ 12×)", cost, ratio, c100)
				}
			}
		})
	}
}

// BenchmarkLoadAmongMany loads a 100-turn session from a store that holds
// only it, and from one that holds 1,000 other sessions besides, and
// fails when the second load costs more than 1.5× the first (median,
// CPU time): session/load finds its session by id, whatever else is
// stored.
func BenchmarkLoadAmongMany(b *testing.B) {
	costs := map[int]time.Duration{}
	for _, others := range []int{0, 1000} {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			lc, cwd := loadRig(b, 100, 10, others)
			var cpu []time.Duration
			for b.Loop() {
				t0, c0 := time.Now(), processCPU()
				lc.call(b, "session/load", map[string]any{"sessionId": "s", "cwd": cwd, "mcpServers": []any{}})
				cpu = append(cpu, cmp.Or(processCPU()-c0, time.Since(t0)))
				lc.call(b, "session/close", map[string]any{"sessionId": "s"})
			}
			slices.Sort(cpu)
			costs[others] = cpu[len(cpu)/2]
			b.ReportMetric(float64(costs[others].Microseconds())/1000, "ms-cpu/load")
			if alone := costs[0]; others > 0 && alone > 0 {
				ratio := float64(costs[others]) / float64(alone)
				b.ReportMetric(ratio, "load-among-many/alone")
				if ratio > 1.5 {
					b.Errorf("loading one session among %d others took %v, %.2f× loading it alone (%v); the target is no dependence", others, costs[others], ratio, alone)
				}
			}
		})
	}
}
