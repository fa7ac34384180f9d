package code_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dsh-acp/dsh-acp/agent/agenttest"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/code"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/internal/workertest"
)

// BenchmarkProgram runs a program through the whole session path: 0 and 10
// dispatches of a trivial tool. dispatch-ns is the cost per dispatch above
// the empty program.
func BenchmarkProgram(b *testing.B) {
	natives := []capabilities.Tool{echo{}}
	tool := code.Tool{Tools: natives, Programs: workertest.Pool(b, jsworker.Options{})}
	env := agenttest.NewMemory(b, func(*llm.Request) agenttest.Reply { return agenttest.Reply{Text: "ok"} },
		func(capabilities.Env) []capabilities.Tool { return []capabilities.Tool{echo{}, tool} })
	parent := env.Session(b)
	for name, src := range map[string]string{
		"empty":        `return 1`,
		"1dispatch":    `return await tools.echo({text: "x"})`,
		"10dispatches": `let s = ""; for (let i = 0; i < 10; i++) s += await tools.echo({text: "x"}); return s.length`,
	} {
		args, _ := json.Marshal(map[string]string{"code": src})
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out := parent.Dispatch(context.Background(), "", "c", code.Name, string(args))
				if out.IsError {
					b.Fatal(out.Content[0].Text)
				}
			}
		})
	}
}
