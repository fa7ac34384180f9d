package workflow_test

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/agenttest"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/capabilities/workflow"
	"github.com/dsh-acp/dsh-acp/internal/workertest"
	"github.com/dsh-acp/dsh-acp/session"
)

// TestMain builds the program worker the tests run their scripts in.
func TestMain(m *testing.M) { os.Exit(workertest.Main(m)) }

// model: a child answers "ECHO x" with x, "ERR" with a failed finish,
// "HANG" by blocking, "STRUCT <json>" by calling structured_output.
func model(req *llm.Request) agenttest.Reply {
	last := agenttest.LastUser(req)
	if agenttest.LastIsToolResult(req) {
		return agenttest.Reply{Text: "done"}
	}
	switch {
	case strings.HasPrefix(last, "ECHO "):
		return agenttest.Reply{Text: strings.TrimPrefix(last, "ECHO ")}
	case strings.HasPrefix(last, "STRUCT "):
		return agenttest.Reply{Calls: []agenttest.Call{{Name: "structured_output", Args: strings.TrimPrefix(last, "STRUCT ")}}}
	case last == "ERR":
		return agenttest.Reply{Finish: "error"}
	case last == "HANG":
		return agenttest.Reply{Hang: true}
	}
	return agenttest.Reply{Text: "OK"}
}

type fixture struct {
	env    *agenttest.Env
	parent *agent.Session
	reg    *capabilities.Registry
}

func newFixture(t *testing.T, cfg workflow.Config) *fixture {
	tool := workflow.Tool{Engine: cfg, Programs: workertest.Pool(t, jsworker.Options{})}
	env := agenttest.New(t, model, func(capabilities.Env) []capabilities.Tool { return []capabilities.Tool{tool} })
	return &fixture{env: env, parent: env.Session(t), reg: capabilities.NewRegistry(tool)}
}

// run calls the workflow tool with script and returns its result text.
func (f *fixture) run(t *testing.T, ctx context.Context, script string, extra ...string) (string, bool) {
	t.Helper()
	args := map[string]any{"meta": map[string]any{"name": "t", "description": "a test"}, "script": script}
	if len(extra) > 0 {
		args["args"] = json.RawMessage(extra[0])
	}
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	out := f.reg.Execute(ctx, f.parent, "call-1", workflow.Name, string(raw))
	return out.Content[0].Text, out.IsError
}

func TestWorkflowRunsChildrenAndReturnsJSON(t *testing.T) {
	f := newFixture(t, workflow.Config{})
	text, isErr := f.run(t, context.Background(), "phase('Run')\nconst reply = await agent('ECHO WF_CHILD_OK')\nreturn { reply }")
	require.False(t, isErr, text)
	assert.Equal(t, "workflow \"t\" completed (1 agent).\nReturn value:\n{\n  \"reply\": \"WF_CHILD_OK\"\n}", text)
	require.Len(t, f.env.Children(t, f.parent.ID()), 1, "the child's log is written beside the parent's")
}

func TestParallelChildrenWithAStructuredResult(t *testing.T) {
	f := newFixture(t, workflow.Config{})
	script := `const schema = {type: "object", properties: {n: {type: "integer"}}, required: ["n"]};
const [a, b, bad] = await parallel([
  () => agent('STRUCT {"n": 1}', {schema, label: "one"}),
  () => agent('STRUCT {"n": 2}', {schema}),
  () => agent('ERR'),
]);
return { sum: a.n + b.n, bad, args }`
	text, isErr := f.run(t, context.Background(), script, `{"k":[1,2]}`)
	require.False(t, isErr, text)
	assert.Equal(t, "workflow \"t\" completed (3 agents).\nReturn value:\n{\n  \"sum\": 3,\n  \"bad\": null,\n  \"args\": {\n    \"k\": [\n      1,\n      2\n    ]\n  }\n}", text)
	assert.Len(t, f.env.Children(t, f.parent.ID()), 3)
}

func TestPipelineAndNonFatalThrows(t *testing.T) {
	f := newFixture(t, workflow.Config{})
	script := `const out = await pipeline([1, 2, 3],
  (prev, item, i) => { if (item === 2) throw new Error("skip"); return prev * 10 },
  async (prev, item, i) => prev + i)
const p = await parallel([() => 1, () => { throw "plain" }, async () => 3])
return { out, p, undef: undefined === args }`
	text, isErr := f.run(t, context.Background(), script)
	require.False(t, isErr, text)
	var got struct {
		Out   []any `json:"out"`
		P     []any `json:"p"`
		Undef bool  `json:"undef"`
	}
	require.NoError(t, json.Unmarshal([]byte(text[strings.Index(text, "{"):]), &got))
	assert.Equal(t, []any{10.0, nil, 32.0}, got.Out)
	assert.Equal(t, []any{1.0, nil, 3.0}, got.P)
	assert.True(t, got.Undef, "args is undefined when the call has none")
	assert.Contains(t, text, "completed (0 agents)")
}

func TestRealmHasOnlyTheListedGlobals(t *testing.T) {
	f := newFixture(t, workflow.Config{})
	text, isErr := f.run(t, context.Background(), `return [typeof console, typeof setTimeout, typeof require, typeof process,
  typeof fetch, typeof agent, typeof parallel, typeof pipeline, typeof phase, typeof log, typeof host, typeof Date, typeof Math.random]`)
	require.False(t, isErr, text)
	var got []string
	require.NoError(t, json.Unmarshal([]byte(text[strings.Index(text, "["):]), &got))
	assert.Equal(t, []string{"undefined", "undefined", "undefined", "undefined", "undefined", "function", "function", "function",
		"function", "function", "undefined", "function", "function"}, got)
}

func TestWorkflowErrors(t *testing.T) {
	f := newFixture(t, workflow.Config{SyncLimit: 200 * time.Millisecond})
	for name, c := range map[string]struct{ script, want string }{
		"throw":            {`throw new TypeError("boom")`, "Error: workflow run failed: TypeError: boom"},
		"throw non-error":  {`throw 42`, "Error: workflow run failed: 42"},
		"syntax":           {`return {`, "Error: workflow script does not parse: SyntaxError: "},
		"export meta":      {"// header\nexport const meta = {name: 'x'}\nreturn 1", "Error: workflow meta rides the `meta` request field, not the script: remove the `export const meta = {...}` statement from the body"},
		"cycle":            {`const a = {x: [1]}; a.x.push(a); return a`, "Error: the workflow's return value is not plain JSON data — value.x[1]: a circular reference is not JSON data. Return only JSON-serializable objects/arrays/scalars."},
		"function":         {`return {f() {}}`, "Error: the workflow's return value is not plain JSON data — value.f: a function is not JSON data. Return only JSON-serializable objects/arrays/scalars."},
		"date":             {`return [new Date(0)]`, "Error: the workflow's return value is not plain JSON data — value[0]: a Date (exotic prototype) is not JSON data. Return only JSON-serializable objects/arrays/scalars."},
		"undefined inside": {`return {u: undefined}`, "Error: the workflow's return value is not plain JSON data — value.u: undefined is not JSON data. Return only JSON-serializable objects/arrays/scalars."},
		"nan":              {`return [NaN]`, "Error: the workflow's return value is not plain JSON data — value[0]: a non-finite number is not JSON data. Return only JSON-serializable objects/arrays/scalars."},
		"sync loop":        {`while (true) {}`, "Error: workflow run failed: the script's synchronous part ran over 200 ms (it must await agent() calls, not spin)"},
		"spin after await": {`await agent("ECHO x"); for (;;) {}`, "Error: workflow run failed: the script computed for more than 200 ms after an await without yielding (it must await agent() calls, not spin)"},
		"never settles":    {`await new Promise(() => {}); return 1`, "Error: workflow run failed: the script awaits a promise that nothing can settle"},
		"empty prompt":     {`await agent("")`, "Error: workflow run failed: Error: agent() requires a non-empty prompt string"},
		"options array":    {`await agent("ECHO x", [])`, "Error: workflow run failed: Error: agent() options must be an object"},
		"options fn":       {`await agent("ECHO x", {label: () => 1})`, "Error: workflow run failed: Error: agent() options must be plain JSON data — options.label: a function is not JSON data"},
		"deferred option":  {`await agent("ECHO x", {effort: "high"})`, `Error: workflow run failed: Error: agent() option "effort" is deferred and not supported by this engine (supported: label, phase, schema, model)`},
		"unknown option":   {`await agent("ECHO x", {colour: "red"})`, `Error: workflow run failed: Error: agent() option "colour" is not recognized (supported: label, phase, schema, model)`},
		"option type":      {`await agent("ECHO x", {label: 3})`, `Error: workflow run failed: Error: agent() option "label" must be a string`},
		"schema subset":    {`await agent("ECHO x", {schema: {type: "string"}})`, `Error: workflow run failed: Error: agent() schema is outside the supported subset — schema.type must be "object" (structured output is object-rooted)`},
		"parallel type":    {`await parallel(1)`, "Error: workflow run failed: Error: parallel() requires an array of zero-argument functions"},
		"parallel item":    {`await parallel([() => 1, 2])`, "Error: workflow run failed: Error: parallel() item 1 is not a function"},
		"pipeline items":   {`await pipeline({}, x => x)`, "Error: workflow run failed: Error: pipeline() requires an items array"},
		"pipeline stages":  {`await pipeline([1])`, "Error: workflow run failed: Error: pipeline() requires at least one stage function"},
		"pipeline stage":   {`await pipeline([1], x => x, 3)`, "Error: workflow run failed: Error: pipeline() stage 1 is not a function"},
		"item cap":         {`await parallel(Array.from({length: 4097}, () => () => 1))`, "Error: workflow run failed: Error: parallel() received 4097 items — over the per-call cap (4096); split the work or raise maxItemsPerCall in the engine config"},
		"phase":            {`phase("")`, "Error: workflow run failed: Error: phase() requires a non-empty title string"},
		"log":              {`log(1)`, "Error: workflow run failed: Error: log() requires a message string"},
		"fatal not null":   {`const r = await parallel([() => agent("")]); return r`, "Error: workflow run failed: Error: agent() requires a non-empty prompt string"},
		"fatal caught":     {`try { await agent("") } catch (e) {} return 1`, "Error: workflow run failed: Error: agent() requires a non-empty prompt string"},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			text, isErr := f.run(t, context.Background(), c.script)
			assert.True(t, isErr, text)
			if name == "syntax" {
				assert.True(t, strings.HasPrefix(text, c.want), text)
			} else {
				assert.Equal(t, c.want, text)
			}
			assert.Less(t, time.Since(start), 3*time.Second)
		})
	}
}

// TestHostileScriptsEndAsResults: a parser-deep literal is refused, a
// stack overflow at run time and a memory bomb end their worker, and the
// next script runs in a fresh one.
func TestHostileScriptsEndAsResults(t *testing.T) {
	f := newFixture(t, workflow.Config{})
	for _, c := range []struct{ script, want string }{
		{"return " + strings.Repeat("[", 300000) + strings.Repeat("]", 300000), "Error: workflow script does not parse: SyntaxError: the program nests brackets more than 1000 levels deep (line 1, column 1008)"},
		{`eval('['.repeat(3e5) + ']'.repeat(3e5)); return 1`, "Error: workflow run failed: the program's worker crashed: stack overflow (the program nests or recurses too deeply)"},
		{`const s = 'x'.repeat(2 ** 30); return s.length`, "Error: workflow run failed: the program used more memory than its cap (256 MiB) allows; its worker was stopped"},
		{`return 6 * 7`, `workflow "t" completed (0 agents).` + "\nReturn value:\n42"},
	} {
		text, _ := f.run(t, context.Background(), c.script)
		// A stack overflow can lose the race with the compute watchdog on
		// a loaded machine (the parser inside eval does not see goja's
		// interrupt): either way the script ended as a result.
		if strings.Contains(c.want, "stack overflow") && strings.Contains(text, "without yielding and did not stop; its worker was killed") {
			continue
		}
		assert.Equal(t, c.want, text)
	}
}

func TestMetaViolationsAreAllNamed(t *testing.T) {
	f := newFixture(t, workflow.Config{})
	// Types are the schema's to check, first (tools § 2)...
	raw := `{"script":"return 1","meta":{"name":"n","description":"d","whenToUse":3,"phases":[{"title":"t","detail":1},"p"]}}`
	out := f.reg.Execute(context.Background(), f.parent, "c", workflow.Name, raw)
	require.True(t, out.IsError)
	assert.Equal(t, `Error: invalid arguments: "meta.whenToUse" must be a string; "meta.phases[0].detail" must be a string; "meta.phases[1]" must be an object`,
		out.Content[0].Text)
	// ... the rest is the tool's, every violation named.
	raw = `{"script":"return 1","meta":{"name":"","description":"d","owner":"me","phases":[{"title":"","x":0},{"title":"ok","model":"m"}]}}`
	out = f.reg.Execute(context.Background(), f.parent, "c", workflow.Name, raw)
	require.True(t, out.IsError)
	assert.Equal(t, "Error: invalid meta: meta.name must be a non-empty string; "+
		"meta.owner is not a recognized field (name/description/whenToUse/phases); meta.phases[0].title must be a non-empty string; "+
		"meta.phases[0].x is not a recognized field", out.Content[0].Text)
	assert.Equal(t, "META_INVALID", out.Error.Code)
}

func TestTotalAgentCap(t *testing.T) {
	f := newFixture(t, workflow.Config{})
	start := time.Now()
	text, isErr := f.run(t, context.Background(), `for (let i = 0; i < 1001; i++) agent("ECHO " + i); return 1`)
	require.True(t, isErr, text)
	assert.Equal(t, "Error: workflow run failed: Error: this run reached its total agent cap (1000) — a runaway-loop backstop; "+
		"raise maxTotalAgents in the engine config if the scale is intentional", text)
	t.Logf("1001 agent() calls settled in %v", time.Since(start))
}

func TestCancelledRunSettlesWhileAwaitingForever(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	var f *fixture
	started := make(chan struct{}, 1)
	f = newFixture(t, workflow.Config{OnAgent: func(ev workflow.AgentEvent) {
		if !ev.Done {
			started <- struct{}{}
		}
	}})
	go func() {
		// Cancel once the hanging child is in its model call (its log is
		// then written when it is disposed; a child's log reaches the
		// store at its first durable write, which a hanging turn never
		// makes).
		<-started
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && f.env.Provider.Calls() < 1; time.Sleep(5 * time.Millisecond) {
		}
		cancel(context.Canceled)
	}()
	text, isErr := f.run(t, ctx, `const never = agent("HANG"); await never; return 1`)
	require.True(t, isErr)
	assert.Equal(t, "Error: workflow run was cancelled (workflow run cancelled: context canceled)", text)
	kids := f.env.Children(t, f.parent.ID())
	require.Len(t, kids, 1, "the hanging child was written and disposed")
}

func TestCancelInterruptsASyncLoopAfterTheSlice(t *testing.T) {
	f := newFixture(t, workflow.Config{})
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(150*time.Millisecond, func() { cancel(context.Canceled) })
	start := time.Now()
	text, isErr := f.run(t, ctx, `await agent("ECHO x"); while (true) {}`)
	require.True(t, isErr)
	assert.Equal(t, "Error: workflow run was cancelled (workflow run cancelled: context canceled)", text)
	assert.Less(t, time.Since(start), 3*time.Second)
}

func TestNoCallingAgent(t *testing.T) {
	reg := capabilities.NewRegistry(workflow.Tool{})
	out := reg.Execute(context.Background(), nil, "c", workflow.Name, `{"script":"return 1","meta":{"name":"n","description":"d"}}`)
	require.True(t, out.IsError)
	assert.Equal(t, "Error: "+workflow.ErrNoAgent, out.Content[0].Text)
}

func TestHundredChildrenEachWriteTheirLog(t *testing.T) {
	f := newFixture(t, workflow.Config{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	text, isErr := f.run(t, context.Background(), `const r = await parallel(Array.from({length: 100}, (_, i) => () => agent("ECHO " + i)));
return r.filter((x, i) => x === String(i)).length`)
	require.False(t, isErr, text)
	assert.Equal(t, "workflow \"t\" completed (100 agents).\nReturn value:\n100", text)
	assert.Len(t, f.env.Children(t, f.parent.ID()), 100)
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Disposed children and the finished realm are garbage: what stays is
	// the parent's (bounded by far less than a megabyte per child).
	assert.Less(t, int64(after.HeapAlloc)-int64(before.HeapAlloc), int64(8<<20))
	t.Logf("heap after 100 children: %+d bytes", int64(after.HeapAlloc)-int64(before.HeapAlloc))
}

func TestCardShowsTheWorkflowName(t *testing.T) {
	v := workflow.Tool{}.PresentCall(json.RawMessage(`{"meta":{"name":"snapshot-flow","description":"d"},"script":"return 1"}`))
	assert.Equal(t, "workflow: snapshot-flow", v.Title)
	assert.Equal(t, `"return 1"`, string(v.RawInput))
}

func TestProgressCountsAgentsInCallOrder(t *testing.T) {
	f := newFixture(t, workflow.Config{})
	reg := capabilities.NewRegistry(workflow.Tool{Progress: true, Programs: workertest.Pool(t, jsworker.Options{})})
	raw := `{"meta":{"name":"p","description":"d"},"script":"phase('Run'); return await parallel([() => agent('ECHO 1', {label: 'a'}), () => agent('ERR', {label: 'b'})])"}`
	before := f.parent.Log().Len()
	out := reg.Execute(context.Background(), f.parent, "call-9", workflow.Name, raw)
	require.False(t, out.IsError, out.Content[0].Text)
	var shown []string
	for _, e := range f.parent.Log().Events()[before:] {
		if e.Type == session.TypeToolProgress {
			var p session.ToolProgress
			require.NoError(t, e.Decode(&p))
			assert.Equal(t, "call-9", p.CallID)
			shown = append(shown, p.Content[0].Text)
		}
	}
	require.Len(t, shown, 4)
	assert.Equal(t, "Run — 0 of 1 agent done\n• a", shown[0])
	assert.Equal(t, "Run — 0 of 2 agents done\n• a\n• b", shown[1])
	assert.Contains(t, []string{"Run — 1 of 2 agents done\n• a\n• b", "Run — 1 of 2 agents done, 1 failed\n• a\n• b"}, shown[2])
	assert.Equal(t, "Run — 2 of 2 agents done, 1 failed\n• a\n• b", shown[3])
}

func TestAgentModelOptionIsTheChildsModel(t *testing.T) {
	f := newFixture(t, workflow.Config{})
	text, isErr := f.run(t, context.Background(), `return await agent("ECHO m", {model: "other-model", phase: "p", label: "l"})`)
	require.False(t, isErr, text)
	kids := f.env.Children(t, f.parent.ID())
	require.Len(t, kids, 1)
	_, events, err := f.env.Store.Load(context.Background(), kids[0].ID)
	require.NoError(t, err)
	for _, e := range events {
		if e.Type == session.TypeRequestHeader {
			assert.Contains(t, string(e.Data), `"config":{"model":"other-model"}`)
			return
		}
	}
	t.Fatal("no request/header in the child's log")
}

// TestAStretchsAgentsAreAllShownBeforeAnyRuns: the agent() calls of one
// synchronous stretch are all announced, in call order, before any child
// runs, even when the first child would end long before the script makes
// its next call; and with one slot the children run in call order.
func TestAStretchsAgentsAreAllShownBeforeAnyRuns(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	f := newFixture(t, workflow.Config{Concurrency: 1, OnAgent: func(ev workflow.AgentEvent) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Done {
			seen = append(seen, "done "+ev.Label)
		} else {
			seen = append(seen, "start "+ev.Label)
		}
	}})
	text, isErr := f.run(t, context.Background(), `const spin = (ms) => { const end = Date.now() + ms; while (Date.now() < end) {} };
return await parallel([
  () => agent('ECHO a', {label: 'a'}),
  () => { spin(1000); return agent('ECHO b', {label: 'b'}) },
  () => agent('ECHO c', {label: 'c'}),
])`)
	require.False(t, isErr, text)
	assert.Equal(t, "workflow \"t\" completed (3 agents).\nReturn value:\n[\n  \"a\",\n  \"b\",\n  \"c\"\n]", text)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"start a", "start b", "start c", "done a", "done b", "done c"}, seen)
}
