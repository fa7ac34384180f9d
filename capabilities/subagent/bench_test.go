package subagent_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/dsh-acp/dsh-acp/agent/agenttest"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/subagent"
)

// BenchmarkSpawnChild is one spawn child's whole life (mock model, one
// text turn): create, prompt, harvest, dispose. "jsonl" writes the child's
// log like a real session (fsync at turn end); "memory" is the agent's own
// overhead.
func BenchmarkSpawnChild(b *testing.B) {
	for name, mk := range map[string]func(testing.TB, agenttest.Model, func(capabilities.Env) []capabilities.Tool) *agenttest.Env{
		"memory": agenttest.NewMemory, "jsonl": agenttest.New,
	} {
		b.Run(name, func(b *testing.B) {
			env := mk(b, model, tools)
			parent := env.Session(b)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				out, err := subagent.Run(context.Background(), parent, subagent.Request{Prompt: "ECHO hi"})
				if err != nil || out.Text != "hi" {
					b.Fatalf("%v %+v", err, out)
				}
			}
		})
	}
}

// BenchmarkLiveChildMemory measures the heap a live child holds after its
// first turn (B/live-child), with 200 children alive at once.
func BenchmarkLiveChildMemory(b *testing.B) {
	const n = 200
	for b.Loop() {
		env := agenttest.NewMemory(b, model, tools)
		parent := env.Session(b)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		kids := make([]capabilities.Child, 0, n)
		for range n {
			c, err := parent.Spawn(context.Background(), capabilities.ChildOptions{})
			if err != nil {
				b.Fatal(err)
			}
			c.Prompt(context.Background(), "ECHO alive")
			kids = append(kids, c)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/live-child")
		for _, c := range kids {
			_ = c.Close(context.Background())
		}
	}
}
