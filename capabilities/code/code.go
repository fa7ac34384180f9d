// Package code is code mode (tools § 12, subagents-workflows § 5): the
// run_code tool runs a TypeScript program — the body of an async function
// — whose tools.<name>(args) calls dispatch the session's own tools
// through its whole pipeline. TypeScript becomes JavaScript with
// evanw/esbuild's transform; the program runs on goja (package jsrt).
package code

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/evanw/esbuild/pkg/api"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/jsrt"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// Name is the tool's wire name.
const Name = "run_code"

// TypeDispatch is the log event of one tools.<name> call.
const TypeDispatch = "tool/code-dispatch"

// Dispatch is the data of tool/code-dispatch.
type Dispatch struct {
	ParentCallID  string          `json:"parentCallId"`
	SubCallID     string          `json:"subCallId"`
	Name          string          `json:"name"`
	Arguments     json.RawMessage `json:"arguments"`
	IsError       bool            `json:"isError"`
	ResultSummary string          `json:"resultSummary"`
}

// Limits of a run (subagents-workflows § 5).
const (
	DefaultCompute  = 60 * time.Second
	DefaultWall     = 600 * time.Second
	DefaultLogBytes = 65536
	DefaultValueLen = 32768
	summaryChars    = 200
)

// Tool is run_code.
type Tool struct {
	// Tools are the tools its programs may call (every registered tool
	// but run_code), as the model sees them.
	Tools []capabilities.Tool
	// Compute bounds each synchronous stretch of the program, Wall the
	// whole run (zero: the defaults).
	Compute, Wall time.Duration
	// Progress logs the program's dispatches as tool/progress of its call
	// while it runs (the default composition's card); upstream shows
	// nothing.
	Progress bool
}

// Name implements capabilities.Tool.
func (Tool) Name() string { return Name }

// Description implements capabilities.Tool.
func (Tool) Description() string {
	return "Run a TypeScript program (the body of an async function) that calls the session's tools as `await tools.<name>(args)`; " +
		"each call resolves to the tool's text result or throws with it. Use console.log for output and `return` a value. " +
		"The SDK is declared in the system prompt."
}

// Schema implements capabilities.Tool.
func (Tool) Schema() *capabilities.Schema {
	return capabilities.Object(capabilities.Req("code", capabilities.String("The program: TypeScript statements, top-level await allowed; `return` the result.")))
}

// PromptSection implements capabilities.Sectioner: tools:sdk (150).
func (t Tool) PromptSection() capabilities.Section {
	return capabilities.Section{Name: "tools:sdk", Order: 150, Text: SDK(t.Tools)}
}

// PresentCall implements capabilities.CallPresenter: the code is the
// title, kind execute.
func (Tool) PresentCall(args json.RawMessage) capabilities.CallView {
	var a struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(args, &a)
	return capabilities.CallView{Kind: capabilities.ViewGeneric, Title: a.Code, ToolKind: capabilities.ToolKindExecute, RawInput: jsonx.MustMarshal(a.Code)}
}

// PresentResult implements capabilities.ResultPresenter: the captured log
// lines, else the raw result.
func (Tool) PresentResult(_ json.RawMessage, r session.ToolResult) capabilities.ResultView {
	var m struct {
		Logs []LogEntry `json:"logs"`
	}
	if json.Unmarshal(r.Meta, &m) != nil || len(m.Logs) == 0 {
		return capabilities.ResultView{Kind: capabilities.ViewGeneric}
	}
	lines := make([]string, len(m.Logs))
	for i, l := range m.Logs {
		lines[i] = l.Text
	}
	return capabilities.ResultView{Kind: capabilities.ViewGeneric, Content: []session.Block{session.TextBlock(strings.Join(lines, "\n"))}}
}

// LogEntry is one captured output entry.
type LogEntry struct {
	Source string `json:"source"`
	Level  string `json:"level,omitempty"`
	Text   string `json:"text"`
}

// runFailed is the tool's failure: CodeRunFailedError.
func runFailed(kind, msg string, logs []LogEntry) error {
	text := fmt.Sprintf("code run failed (%s): %s", kind, msg)
	if len(logs) > 0 {
		text += "\nCaptured output:\n" + joinLogs(logs)
	}
	return &capabilities.CodedError{Name: "CodeRunFailedError", Code: "CODE_RUN_FAILED", Message: text}
}

func joinLogs(logs []LogEntry) string {
	lines := make([]string, len(logs))
	for i, l := range logs {
		lines[i] = l.Text
	}
	return strings.Join(lines, "\n")
}

// Transform turns the program (TypeScript, a function body) into a
// JavaScript async function expression goja runs. A syntax error names
// the program's line and column.
func Transform(code string) (string, error) {
	if err := nonErasable(code); err != nil {
		return "", err
	}
	const head = "(async function (tools, console, process) {\n"
	res := api.Transform(head+code+"\n})", api.TransformOptions{Loader: api.LoaderTS, Target: api.ES2017, Sourcefile: "program.ts"})
	if len(res.Errors) > 0 {
		m := res.Errors[0]
		if m.Location != nil {
			return "", fmt.Errorf("SyntaxError: %s (line %d, column %d)", m.Text, m.Location.Line-1, m.Location.Column+1)
		}
		return "", errors.New("SyntaxError: " + m.Text)
	}
	return strings.TrimRight(string(res.Code), ";\n"), nil
}

// Run implements capabilities.Tool.
func (t Tool) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var a struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return capabilities.Result{}, err
	}
	d := capabilities.HostOf(call.Session).Dispatcher
	r := &program{tool: t, call: call, dispatcher: d, realm: jsrt.New()}
	defer r.realm.Close()
	return r.run(ctx, a.Code)
}

// program is one run_code run.
type program struct {
	tool       Tool
	call       *capabilities.Call
	dispatcher capabilities.Dispatcher
	realm      *jsrt.Realm

	logs     []LogEntry
	logBytes int
	cut      bool

	mu         sync.Mutex // serializes dispatches (they run one at a time, in call order)
	dispatches int
	inflight   int
	shown      []string      // progress lines: one per dispatch
	prev       chan struct{} // closed when the latest dispatch finished (realm goroutine only)
}

func (p *program) run(ctx context.Context, code string) (capabilities.Result, error) {
	compute, wall := p.tool.Compute, p.tool.Wall
	if compute <= 0 {
		compute = DefaultCompute
	}
	if wall <= 0 {
		wall = DefaultWall
	}
	js, err := Transform(code)
	if err != nil {
		return capabilities.Result{}, runFailed("exception", err.Error(), nil)
	}
	prog, err := goja.Compile("program.js", js, true)
	if err != nil {
		return capabilities.Result{}, runFailed("exception", err.Error(), nil)
	}
	wctx, cancel := context.WithTimeoutCause(ctx, wall, errWall)
	defer cancel()
	p.realm.JobLimit = compute
	fn, err := p.realm.RunSlice(prog, compute)
	if err != nil {
		return capabilities.Result{}, runFailed("exception", err.Error(), nil)
	}
	f, _ := goja.AssertFunction(fn)
	var v goja.Value
	stop := context.AfterFunc(wctx, func() { p.realm.Interrupt(context.Cause(wctx)) })
	var callErr error
	_, callErr = p.slice(compute, func() (goja.Value, error) {
		var e error
		v, e = f(goja.Undefined(), p.toolsObject(wctx), p.console(), p.process())
		return v, e
	})
	stop()
	if callErr != nil {
		return capabilities.Result{}, p.failure(wctx, ctx, callErr)
	}
	promise, ok := v.Export().(*goja.Promise)
	if !ok {
		return capabilities.Result{}, runFailed("exception", "the program did not run as an async function", p.logs)
	}
	settled, err := p.realm.Await(wctx, promise, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.inflight == 0
	})
	if err != nil {
		return capabilities.Result{}, p.failure(wctx, ctx, err)
	}
	if settled.Rejected {
		return capabilities.Result{}, runFailed("exception", p.thrown(settled.Value), p.logs)
	}
	var parts []string
	if len(p.logs) > 0 {
		parts = append(parts, joinLogs(p.logs))
	}
	if !goja.IsUndefined(settled.Value) {
		parts = append(parts, cutValue(render(settled.Value)))
	}
	text := strings.Join(parts, "\n")
	if text == "" {
		text = "(run_code completed with no output)"
	}
	logs := p.logs
	if logs == nil {
		logs = []LogEntry{}
	}
	meta := jsonx.MustMarshal(struct {
		Logs       []LogEntry `json:"logs"`
		Dispatches int        `json:"dispatches"`
	}{logs, p.dispatches})
	return capabilities.Result{Content: []session.Block{session.TextBlock(text)}, Meta: meta}, nil
}

var errWall = errors.New("the program ran past its wall-clock limit")

// slice runs f as a synchronous stretch bounded by the compute limit.
func (p *program) slice(limit time.Duration, f func() (goja.Value, error)) (goja.Value, error) {
	t := time.AfterFunc(limit, func() { p.realm.Interrupt(jsrt.ErrSliceLimit) })
	defer func() {
		t.Stop()
		p.realm.VM.ClearInterrupt()
	}()
	v, err := f()
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if e, ok := ie.Value().(error); ok {
			return nil, e
		}
	}
	return v, err
}

// failure maps a run error to the tool's failure kinds.
func (p *program) failure(wctx, parent context.Context, err error) error {
	switch {
	case parent.Err() != nil:
		return runFailed("abort", "the run was cancelled: "+context.Cause(parent).Error(), p.logs)
	case errors.Is(err, jsrt.ErrSliceLimit):
		return runFailed("timeout", fmt.Sprintf("the program computed for more than %s without yielding", p.compute()), p.logs)
	case wctx.Err() != nil || errors.Is(err, errWall):
		return runFailed("timeout", errWall.Error(), p.logs)
	case errors.Is(err, jsrt.ErrStalled):
		return runFailed("exception", "the program awaits a promise that nothing can settle", p.logs)
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return runFailed("exception", p.thrown(ex.Value()), p.logs)
	}
	return runFailed("exception", err.Error(), p.logs)
}

func (p *program) compute() time.Duration {
	if p.tool.Compute > 0 {
		return p.tool.Compute
	}
	return DefaultCompute
}

// cutValue bounds the rendered return value.
func cutValue(s string) string {
	if len(s) <= DefaultValueLen {
		return s
	}
	cut := DefaultValueLen
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… [value truncated: %d more bytes]", len(s)-cut)
}

// thrown renders a thrown value: "<name>: <message>" for an Error, the
// string itself, else the value inspected.
func (p *program) thrown(v goja.Value) string {
	if o, ok := v.(*goja.Object); ok && o.ClassName() == "Error" {
		return p.realm.ErrorText(v)
	}
	return render(v)
}
