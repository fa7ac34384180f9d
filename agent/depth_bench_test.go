package agent

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/fs"
	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
)

// turnModel is the model of the depth benchmarks: each turn reads a
// 2 KB file, then answers in `chunks` text chunks. It reports input
// tokens in proportion to the request's messages, so a session compacts
// about every 60 turns, and answers the summariser's call.
type turnModel struct {
	*llmtest.Model
	chunks int

	mu    sync.Mutex
	first time.Time // when the turn's first request arrived
}

func newTurnModel(chunks int) *turnModel {
	m := &turnModel{chunks: chunks}
	m.Model = llmtest.New(m.answer)
	return m
}

// unrecorded keeps no requests: the benchmarks measure the session's
// memory, not the model's.
func (m *turnModel) unrecorded() *turnModel {
	m.Unrecorded()
	return m
}

func (m *turnModel) answer(_ context.Context, c llmtest.Call) llmtest.Step {
	m.mu.Lock()
	if m.first.IsZero() {
		m.first = time.Now()
	}
	m.mu.Unlock()
	req := c.Req
	var out []llm.Chunk
	last := req.Messages[len(req.Messages)-1]
	switch {
	case req.System == compactPrompt:
		out = []llm.Chunk{text(0, "The user read a.txt many times; nothing changed."), finish(llm.FinishStop)}
	case len(last.Content) > 0 && last.Content[0].Type == session.BlockToolResult:
		for i := range m.chunks {
			out = append(out, text(0, fmt.Sprintf("word%d ", i)))
		}
		out = append(out, llm.Chunk{Type: llm.ChunkUsage, Usage: &llm.Usage{InputTokens: 300 * len(req.Messages), OutputTokens: m.chunks}},
			finish(llm.FinishStop))
	default:
		out = append(toolCall(0, fmt.Sprintf("c%d", len(req.Messages)), "read", `{"file_path":"a.txt"}`), finish(llm.FinishToolCalls))
	}
	return llmtest.Step{Chunks: out}
}

// takeFirst returns when the turn's first request arrived and resets it.
func (m *turnModel) takeFirst() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.first
	m.first = time.Time{}
	return t
}

// depthSession is a session of the depth benchmarks over a JSONL store,
// with the real read tool and compaction at 80 % of a 100k window.
func depthSession(tb testing.TB, m *turnModel) *Session {
	s, _ := longSession(tb, m, false)
	return s
}

// longSession is depthSession, also returning its store, checking every
// step's derivation against the whole log when check is set
// (Config.CheckDerivation).
func longSession(tb testing.TB, m *turnModel, check bool) (*Session, *jsonl.Store) {
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte(strings.Repeat(strings.Repeat("x", 63)+"\n", 32)), 0o644); err != nil {
		tb.Fatal(err)
	}
	store, err := jsonl.Open(filepath.Join(dir, ".sessions"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = store.Close() })
	var clock int64
	rt := NewRuntime(Config{Model: "m", Provider: m, Store: store, NewID: func() string { return "depth" },
		Clock: func() int64 { clock++; return clock },
		Tools: func(capabilities.Env) *capabilities.Registry {
			return capabilities.NewRegistry(fs.New(fs.Options{Confine: true})...)
		},
		Log: zerolog.Nop(), Compaction: &Compaction{Window: 100_000}, CheckDerivation: check})
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: dir})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close(context.Background()) })
	return s, store
}

// depthSample is what a window of turns at one depth measured.
type depthSample struct {
	firstRequest time.Duration // median prompt → first model request
	turn         time.Duration // median whole turn
	cpu          time.Duration // the process's CPU time per turn (0: unknown)
}

// runTurns runs n turns and returns their medians.
func runTurns(b *testing.B, s *Session, m *turnModel, n int) depthSample {
	firsts, turns := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	cpu0 := processCPU()
	for range n {
		m.takeFirst()
		t0 := time.Now()
		if r := s.Prompt(context.Background(), "read a.txt"); r.Kind != session.EndCompleted {
			b.Fatalf("turn ended %+v", r)
		}
		turns = append(turns, time.Since(t0))
		firsts = append(firsts, m.takeFirst().Sub(t0))
	}
	return depthSample{median(firsts), median(turns), (processCPU() - cpu0) / time.Duration(n)}
}

// medianSample is the median of each figure over the windows.
func medianSample(runs []depthSample) depthSample {
	var first, turn, cpu []time.Duration
	for _, r := range runs {
		first, turn, cpu = append(first, r.firstRequest), append(turn, r.turn), append(cpu, r.cpu)
	}
	return depthSample{median(first), median(turn), median(cpu)}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// liveBytes is the heap in use after a full collection, and the process's
// resident memory after the runtime returned what it could (0 where the
// system has no /proc).
func liveBytes() (heap, rss uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, processRSS()
}

// BenchmarkStepAtDepth runs one long session, one read and one answer a
// turn, compacting as it grows, and measures prompt → first model request
// and the whole turn (median of 60 turns; CPU, the mean; each the median
// of three such windows) at 10, 100, 1,000 and 3,000 prior turns, with
// answers of 1 and 300 chunks, and the memory each turn keeps. It fails when a step at turn 3,000 costs more than 1.5× one at
// turn 100, or when a turn keeps more than 8 KB of heap or of resident
// memory.
func BenchmarkStepAtDepth(b *testing.B) {
	for _, chunks := range []int{1, 300} {
		b.Run(fmt.Sprintf("chunks=%d", chunks), func(b *testing.B) {
			for b.Loop() {
				m := newTurnModel(chunks).unrecorded()
				s := depthSession(b, m)
				// A window spans about one compaction period (60 turns),
				// so each window's figure carries its share of the
				// compactions and of the collections between them. A
				// depth runs three windows and keeps the median of their
				// CPU figures: one window that a stray tick or an fsync
				// stall of the machine landed in does not decide it.
				const window, windows = 60, 3
				done := 0
				samples := map[int]depthSample{}
				var heap100, rss100 uint64
				for _, depth := range []int{10, 100, 1000, 3000} {
					for ; done < depth; done++ {
						if r := s.Prompt(context.Background(), "read a.txt"); r.Kind != session.EndCompleted {
							b.Fatalf("turn %d ended %+v", done+1, r)
						}
					}
					if depth == 100 {
						heap100, rss100 = liveBytes()
					}
					var runs []depthSample
					for range windows {
						runs = append(runs, runTurns(b, s, m, window))
						done += window
					}
					samples[depth] = medianSample(runs)
				}
				heap3000, rss3000 := liveBytes()
				for _, depth := range []int{10, 100, 1000, 3000} {
					b.ReportMetric(float64(samples[depth].firstRequest.Microseconds()), fmt.Sprintf("µs-first-request@%d", depth))
					b.ReportMetric(float64(samples[depth].turn.Microseconds()), fmt.Sprintf("µs-turn@%d", depth))
					b.ReportMetric(float64(samples[depth].cpu.Microseconds()), fmt.Sprintf("µs-cpu/turn@%d", depth))
				}
				turns := float64(done - 100)
				heapPerTurn := (float64(heap3000) - float64(heap100)) / turns
				b.ReportMetric(heapPerTurn/1024, "KB-heap/turn")
				if rss100 > 0 {
					b.ReportMetric((float64(rss3000)-float64(rss100))/turns/1024, "KB-RSS/turn")
				}
				// The turn's cost is judged by the CPU it takes (other
				// processes on the machine do not change it; fsync waits
				// do not count), by wall time where that is unknown.
				cost := func(d int) time.Duration { return cmp.Or(samples[d].cpu, samples[d].turn) }
				for _, depth := range []int{10, 100, 1000, 3000} {
					sm := samples[depth]
					b.Logf("chunks=%d depth=%d: first request %v, turn %v, CPU/turn %v", chunks, depth, sm.firstRequest, sm.turn, sm.cpu)
				}
				b.Logf("chunks=%d: %.1f KB heap/turn", chunks, heapPerTurn/1024)
				ratio := float64(cost(3000)) / float64(cost(100))
				b.ReportMetric(ratio, "turn-3000/100")
				if ratio > 1.5 {
					b.Errorf("a turn at depth 3000 cost %v, %.2f× one at depth 100 (%v); the target is 1.5×", cost(3000), ratio, cost(100))
				}
				if fr := float64(samples[3000].firstRequest) / float64(samples[100].firstRequest); fr > 1.5 {
					b.Errorf("prompt → first request at depth 3000 took %v, %.2f× depth 100 (%v); the target is 1.5×",
						samples[3000].firstRequest, fr, samples[100].firstRequest)
				}
				if heapPerTurn > 8<<10 {
					b.Errorf("each turn keeps %.1f KB of heap; the target is 8 KB", heapPerTurn/1024)
				}
				if rssPerTurn := (float64(rss3000) - float64(rss100)) / turns; rss100 > 0 && rssPerTurn > 8<<10 {
					b.Errorf("each turn keeps %.1f KB of resident memory; the target is 8 KB", rssPerTurn/1024)
				}
			}
		})
	}
}

// processRSS is the process's resident set (VmRSS), or 0 where there is
// no /proc.
func processRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb uint64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}
