package jsworker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/internal/workertest"
)

// answerAtOnce is a handler that answers every call with its arguments.
func answerAtOnce(batch []jsworker.Request) {
	for _, r := range batch {
		r.Answer(jsproto.Reply{Text: r.Call.Args})
	}
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
// worker over the in-process dispatch (the handler answers at once, so
// the dispatch itself costs nothing here): each iteration runs a program
// making 100 calls and the same program making none, and ns/call is the
// difference over 100 (the target: ≤ 0.2 ms). Both run in the same
// iteration, so a load that changes while it runs weighs on both.
func BenchmarkCallRoundTrip(b *testing.B) {
	p := workertest.Pool(b, jsworker.Options{})
	const calls = 100
	program := func(n int) jsproto.Run {
		return jsproto.Run{Kind: jsproto.KindCode, Tools: []string{"echo"}, ComputeMS: 60000, MaxDepth: jsproto.DefaultMaxDepth,
			Source: fmt.Sprintf(`let s = 0; for (let i = 0; i < %d; i++) s += (await tools.echo({i})).length; return s`, n)}
	}
	none, many := program(0), program(calls)
	var with, without time.Duration
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range []struct {
			run jsproto.Run
			sum *time.Duration
		}{{none, &without}, {many, &with}} {
			start := time.Now()
			d, err := p.Run(context.Background(), r.run, jsworker.Limits{}, answerAtOnce)
			*r.sum += time.Since(start)
			if err != nil || d.Fail != "" {
				b.Fatal(err, d.Message)
			}
		}
	}
	b.ReportMetric(float64((with-without).Nanoseconds())/float64(b.N*calls), "ns/call")
	b.ReportMetric(float64(without.Nanoseconds())/float64(b.N), "ns/empty-program")
}
