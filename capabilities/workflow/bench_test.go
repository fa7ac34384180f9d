package workflow_test

import (
	"context"
	"testing"

	"github.com/dsh-acp/dsh-acp/agent/agenttest"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/capabilities/workflow"
	"github.com/dsh-acp/dsh-acp/internal/workertest"
)

// BenchmarkParallel16 is one workflow run with 16 children in parallel
// (mock model, one text turn each); ns/child is the time per child.
func BenchmarkParallel16(b *testing.B) {
	for name, mk := range map[string]func(testing.TB, agenttest.Model, func(capabilities.Env) []capabilities.Tool) *agenttest.Env{
		"memory": agenttest.NewMemory, "jsonl": agenttest.New,
	} {
		b.Run(name, func(b *testing.B) {
			pool := workertest.Pool(b, jsworker.Options{})
			env := mk(b, model, func(capabilities.Env) []capabilities.Tool { return nil })
			parent := env.Session(b)
			script := `return (await parallel(Array.from({length: 16}, (_, i) => () => agent("ECHO " + i)))).length`
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				out, err := workflow.Config{Concurrency: 16}.Run(context.Background(), pool, parent, script, nil)
				if err != nil || out.Value != "16" {
					b.Fatalf("%v %+v", err, out)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16), "ns/child")
		})
	}
}

// BenchmarkRealmStart is a run that starts no agent: realm, globals,
// compile and the plain-JSON return.
func BenchmarkRealmStart(b *testing.B) {
	env := agenttest.NewMemory(b, model, func(capabilities.Env) []capabilities.Tool { return nil })
	parent := env.Session(b)
	pool := workertest.Pool(b, jsworker.Options{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (workflow.Config{}).Run(context.Background(), pool, parent, `return {ok: true}`, nil); err != nil {
			b.Fatal(err)
		}
	}
}
