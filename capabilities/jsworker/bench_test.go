package jsworker_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/internal/workertest"
)

// answerAtOnce is a handler that answers every call with its arguments.
func answerAtOnce(m jsproto.Message, answer func(jsproto.Reply)) {
	answer(jsproto.Reply{Text: m.Call.Args})
}

// BenchmarkSmallProgram is a small run_code program end to end with a
// warm worker: the TypeScript transform, the run and one tool call
// through the protocol (the target: ≤ 5 ms).
func BenchmarkSmallProgram(b *testing.B) {
	p := workertest.Pool(b, jsworker.Options{})
	run := jsproto.Run{Kind: jsproto.KindCode, Tools: []string{"echo"}, ComputeMS: 60000, MaxDepth: jsproto.DefaultMaxDepth,
		Source: `const xs: number[] = [1, 2, 3]; const r = await tools.echo({text: "x"}); return r.length + xs.length`}
	b.ReportAllocs()
	for b.Loop() {
		d, err := p.Run(context.Background(), run, jsworker.Limits{}, answerAtOnce)
		if err != nil || d.Fail != "" {
			b.Fatal(err, d.Message)
		}
	}
}

// BenchmarkCallRoundTrip is what one tools.<name> call costs through the
// worker: a program making 100 calls, per call, less the empty program
// (the target: ≤ 0.2 ms above the in-process dispatch).
func BenchmarkCallRoundTrip(b *testing.B) {
	p := workertest.Pool(b, jsworker.Options{})
	for _, n := range []int{0, 100} {
		run := jsproto.Run{Kind: jsproto.KindCode, Tools: []string{"echo"}, ComputeMS: 60000, MaxDepth: jsproto.DefaultMaxDepth,
			Source: fmt.Sprintf(`let s = 0; for (let i = 0; i < %d; i++) s += (await tools.echo({i})).length; return s`, n)}
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, err := p.Run(context.Background(), run, jsworker.Limits{}, answerAtOnce)
				if err != nil || d.Fail != "" {
					b.Fatal(err, d.Message)
				}
			}
			if n > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
			}
		})
	}
}
