package code_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/agenttest"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/code"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/capabilities/todo"
	"github.com/dsh-acp/dsh-acp/internal/workertest"
	"github.com/dsh-acp/dsh-acp/session"
)

// TestMain builds the program worker the tests run their programs in.
func TestMain(m *testing.M) { os.Exit(workertest.Main(m)) }

// echo returns its text argument; "fail" makes it a failed call.
type echo struct{}

func (echo) Name() string        { return "echo" }
func (echo) Description() string { return "Echo the text back. */ not a comment end" }
func (echo) Schema() *capabilities.Schema {
	return capabilities.Object(capabilities.Req("text", capabilities.String("What to echo.")),
		capabilities.Opt("mode", &capabilities.Schema{Type: "string", Enum: []string{"plain", "loud"}}))
}
func (echo) Traits() capabilities.Traits { return capabilities.Traits{} }
func (echo) Run(_ context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var a struct{ Text, Mode string }
	_ = json.Unmarshal(call.Args, &a)
	if a.Text == "fail" {
		return capabilities.Result{}, &capabilities.CodedError{Name: "EchoError", Code: "FAIL", Message: "echo refused"}
	}
	if a.Mode == "loud" {
		a.Text = strings.ToUpper(a.Text)
	}
	return capabilities.TextResult(a.Text + "\n"), nil
}

func newFixture(t *testing.T, tool code.Tool) (*agenttest.Env, func(string) (capabilities.Outcome, []session.Event)) {
	natives := []capabilities.Tool{echo{}, todo.Tool{}}
	tool.Tools = natives
	tool.Programs = workertest.Pool(t, jsworker.Options{})
	env := agenttest.New(t, func(*llm.Request) agenttest.Reply { return agenttest.Reply{Text: "ok"} },
		func(capabilities.Env) []capabilities.Tool {
			return append(append([]capabilities.Tool(nil), natives...), tool)
		})
	parent := env.Session(t)
	return env, func(src string) (capabilities.Outcome, []session.Event) {
		before := parent.Log().Len()
		args, _ := json.Marshal(map[string]string{"code": src})
		out := parent.Dispatch(context.Background(), "", "call-1", code.Name, string(args))
		return out, parent.Log().Events()[before:]
	}
}

func text(o capabilities.Outcome) string { return o.Content[0].Text }

func TestProgramCallsToolsThroughThePipeline(t *testing.T) {
	_, run := newFixture(t, code.Tool{})
	out, events := run(`const a: string = await tools.echo({text: "CODE_ONE"});
interface Pair { a: string }
const b = await tools.echo({text: "two", mode: "loud"}) as string;
return a.trim() + "+" + b.trim();`)
	require.False(t, out.IsError, text(out))
	assert.Equal(t, "CODE_ONE+TWO", text(out))
	assert.JSONEq(t, `{"logs":[],"dispatches":2}`, string(out.Meta))
	require.Len(t, events, 2)
	assert.Equal(t, code.TypeDispatch, events[0].Type)
	assert.Equal(t, `{"parentCallId":"call-1","subCallId":"call-1:code:1","name":"echo","arguments":{"text":"CODE_ONE"},"isError":false,"resultSummary":"CODE_ONE\n"}`,
		string(events[0].Data))
	assert.Contains(t, string(events[1].Data), `"subCallId":"call-1:code:2"`)
}

func TestConsoleIsCapturedAndValuesInspected(t *testing.T) {
	_, run := newFixture(t, code.Tool{})
	out, _ := run(`console.log("hi", 1, {a: [1, "x"], b: null}); console.error("bad"); return {n: 1, s: "q", nested: {deep: {deeper: {deepest: {gone: {x: 1}}}}}}`)
	require.False(t, out.IsError, text(out))
	assert.Equal(t, "hi 1 { a: [ 1, 'x' ], b: null }\nbad\n{ n: 1, s: 'q', nested: { deep: { deeper: { deepest: { gone: [Object] } } } } }", text(out))
	assert.JSONEq(t, `{"logs":[{"source":"console","level":"log","text":"hi 1 { a: [ 1, 'x' ], b: null }"},{"source":"console","level":"error","text":"bad"}],"dispatches":0}`, string(out.Meta))
	empty, _ := run(`const x = 1`)
	assert.Equal(t, "(run_code completed with no output)", text(empty))
}

func TestBadPrograms(t *testing.T) {
	_, run := newFixture(t, code.Tool{Compute: 200 * time.Millisecond})
	for name, c := range map[string]struct{ src, want string }{
		"syntax":         {"const x = ;", "Error: code run failed (exception): SyntaxError: Unexpected \";\" (line 1, column 11)"},
		"unknown tool":   {"await tools.nope({})", "Error: code run failed (exception): TypeError: tools.nope is not a tool of this session (callable: echo, todo_write)"},
		"schema":         {"await tools.echo({text: 3})", "Error: code run failed (exception): Error: Error: invalid arguments: \"text\" must be a string"},
		"tool fails":     {"console.log('before'); await tools.echo({text: 'fail'})", "Error: code run failed (exception): Error: Error: echo refused\nCaptured output:\nbefore"},
		"caught failure": {"try { await tools.echo({text: 'fail'}) } catch (e) { return 'caught: ' + e.message }", ""},
		"spin":           {"while (true) {}", "Error: code run failed (timeout): the program computed for more than 200ms without yielding"},
		"spin later":     {"await tools.echo({text: 'a'}); for (;;) {}", "Error: code run failed (timeout): the program computed for more than 200ms without yielding"},
		"non-error":      {"throw {code: 7}", "Error: code run failed (exception): { code: 7 }"},
		"string throw":   {"throw 'plain'", "Error: code run failed (exception): plain"},
		"never settles":  {"await new Promise(() => {})", "Error: code run failed (exception): the program awaits a promise that nothing can settle"},
		"cyclic args":    {"const a: any = {}; a.a = a; await tools.echo(a)", "Error: code run failed (exception): TypeError: tools.echo() arguments must be JSON-serializable — args.a: a circular reference is not JSON data"},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			out, _ := run(c.src)
			if c.want == "" {
				require.False(t, out.IsError, text(out))
				assert.Equal(t, "caught: Error: echo refused", text(out))
				return
			}
			require.True(t, out.IsError, text(out))
			assert.Equal(t, c.want, text(out))
			assert.Equal(t, &session.ErrorInfo{Name: "CodeRunFailedError", Code: "CODE_RUN_FAILED"}, out.Error)
			assert.Less(t, time.Since(start), 3*time.Second)
		})
	}
}

// TestHostileProgramsEndAsResults: a parser-deep literal is refused, a
// stack overflow at run time and a memory bomb end their worker, and the
// next program runs in a fresh one.
func TestHostileProgramsEndAsResults(t *testing.T) {
	_, run := newFixture(t, code.Tool{})
	for _, c := range []struct{ src, want string }{
		{"return " + strings.Repeat("[", 300000) + strings.Repeat("]", 300000), "Error: code run failed (exception): SyntaxError: the program nests brackets more than 1000 levels deep (line 1, column 1008)"},
		{"return eval('['.repeat(3e5) + ']'.repeat(3e5)).length", "Error: code run failed (crash): the program's worker crashed: stack overflow (the program nests or recurses too deeply)"},
		{"const s = 'x'.repeat(2 ** 30); return s.length", "Error: code run failed (memory): the program used more memory than its cap (256 MiB) allows; its worker was stopped"},
		{"return 6 * 7", "42"},
	} {
		out, _ := run(c.src)
		assertOutcome(t, c.want, text(out))
	}
}

// assertOutcome compares a hostile program's result. A stack overflow
// can lose the race with the compute watchdog on a loaded machine (the
// parser inside eval does not see goja's interrupt): either way the
// program ended as a result, which is what is asserted then.
func assertOutcome(t *testing.T, want, got string) {
	t.Helper()
	if strings.Contains(want, "stack overflow") && strings.Contains(got, "without yielding and did not stop; its worker was killed") {
		return
	}
	assert.Equal(t, want, got)
}

func TestHugeOutputIsBounded(t *testing.T) {
	_, run := newFixture(t, code.Tool{})
	out, _ := run(`const line = "x".repeat(1000); for (let i = 0; i < 10000; i++) console.log(line); return "y".repeat(100000)`)
	require.False(t, out.IsError)
	var meta struct {
		Logs []code.LogEntry `json:"logs"`
	}
	require.NoError(t, json.Unmarshal(out.Meta, &meta))
	assert.Len(t, meta.Logs, 66, "65 KB of lines, then the marker")
	assert.Equal(t, "[output truncated: the program logged more than 65536 bytes]", meta.Logs[65].Text)
	assert.Less(t, len(text(out)), 65536+32768+200)
	assert.True(t, strings.HasSuffix(text(out), "\n… [value truncated: 67232 more bytes]"))
	cyc, _ := run(`const a: any = {n: 1}; a.self = a; return a`)
	assert.Equal(t, "{ n: 1, self: [Circular *1] }", text(cyc))
}

func TestSDKDeclaresTheCallableTools(t *testing.T) {
	sdk := code.SDK([]capabilities.Tool{todo.Tool{}, echo{}, code.Tool{}})
	i := strings.Index(sdk, "```ts\n")
	require.Positive(t, i)
	assert.Equal(t, "```ts\ndeclare const tools: {\n"+
		"  /** Echo the text back. *\\/ not a comment end */\n"+
		"  echo(args: {\n"+
		"    /** What to echo. */\n"+
		"    text: string;\n"+
		"    mode?: \"plain\" | \"loud\";\n"+
		"  }): Promise<string>;\n"+
		"  /** "+strings.Join(strings.Fields(todo.Tool{}.Description()), " ")+" */\n"+
		"  todo_write(args: {\n"+
		"    /** The complete task list, in order. */\n"+
		"    todos: {\n"+
		"      /** What the task is, in a short imperative sentence. */\n"+
		"      content: string;\n"+
		"      /** The task's state. */\n"+
		"      status: \"pending\" | \"in_progress\" | \"completed\";\n"+
		"    }[];\n"+
		"  }): Promise<string>;\n"+
		"};\n```", sdk[i:])
}

func TestCard(t *testing.T) {
	v := code.Tool{}.PresentCall(json.RawMessage(`{"code":"return 1"}`))
	assert.Equal(t, capabilities.CallView{Kind: capabilities.ViewGeneric, Title: "return 1", ToolKind: "execute", RawInput: json.RawMessage(`"return 1"`)}, v)
	r := code.Tool{}.PresentResult(nil, session.ToolResult{Meta: json.RawMessage(`{"logs":[{"source":"console","level":"log","text":"a"},{"source":"console","level":"log","text":"b"}],"dispatches":0}`)})
	assert.Equal(t, "a\nb", r.Content[0].Text)
	raw := code.Tool{}.PresentResult(nil, session.ToolResult{Meta: json.RawMessage(`{"logs":[],"dispatches":1}`)})
	assert.Nil(t, raw.Content, "no logs: the raw result")
}

func TestProgressListsTheDispatches(t *testing.T) {
	env, run := newFixture(t, code.Tool{Progress: true})
	_ = env
	_, events := run(`await tools.echo({text: "one"}); try { await tools.echo({text: "fail"}) } catch {} return 1`)
	var shown []string
	for _, e := range events {
		if e.Type == session.TypeToolProgress {
			var p session.ToolProgress
			require.NoError(t, e.Decode(&p))
			assert.Equal(t, "call-1", p.CallID)
			shown = append(shown, p.Content[0].Text)
		}
	}
	assert.Equal(t, []string{"✓ echo", "✓ echo\n✗ echo"}, shown)
}

func TestStdoutAndStderrWritesAreCaptured(t *testing.T) {
	_, run := newFixture(t, code.Tool{})
	out, _ := run(`process.stdout.write("out line\n"); process.stderr.write("err line"); return typeof process.env`)
	require.False(t, out.IsError, text(out))
	assert.JSONEq(t, `{"logs":[{"source":"stdout","text":"out line\n"},{"source":"stderr","text":"err line"}],"dispatches":0}`, string(out.Meta))
	assert.Equal(t, "out line\n\nerr line\nundefined", text(out), "no host environment reaches the program")
}

// TestParallelCallsRunInCallOrder: the calls of a Promise.all run one at a
// time in call order, each logged before the next starts, even when the
// program computes between making them; each promise gets its own result.
func TestParallelCallsRunInCallOrder(t *testing.T) {
	_, run := newFixture(t, code.Tool{Progress: true})
	out, events := run(`const spin = (ms: number) => { const end = Date.now() + ms; while (Date.now() < end) {} };
const r = await Promise.all([tools.echo({text: "a"}), (spin(200), tools.echo({text: "b"})), tools.echo({text: "c"})]);
return r.map((s: string) => s.trim()).join("")`)
	require.False(t, out.IsError, text(out))
	assert.Equal(t, "abc", text(out))
	var seen []string
	for _, e := range events {
		switch e.Type {
		case code.TypeDispatch:
			var d code.Dispatch
			require.NoError(t, e.Decode(&d))
			seen = append(seen, d.SubCallID+" "+string(d.Arguments))
		case session.TypeToolProgress:
			seen = append(seen, "progress")
		}
	}
	assert.Equal(t, []string{`call-1:code:1 {"text":"a"}`, "progress", `call-1:code:2 {"text":"b"}`, "progress",
		`call-1:code:3 {"text":"c"}`, "progress"}, seen)
}
