// Package code is code mode (tools § 12, subagents-workflows § 5): the
// run_code tool runs a TypeScript program — the body of an async function
// — whose tools.<name>(args) calls dispatch the session's own tools
// through its whole pipeline. The program runs in the program worker
// (package jsworker; its engine is package program, TypeScript through
// esbuild onto goja): every tools.<name> call comes back here as a request
// and is dispatched in the agent, one at a time in call order.
package code

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
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
	DefaultCompute = 60 * time.Second
	DefaultWall    = 600 * time.Second
	summaryChars   = 200
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
	// Programs runs the programs (nil: run_code fails with a clear
	// error).
	Programs *jsworker.Pool
}

// Name implements capabilities.Tool.
func (Tool) Name() string { return Name }

// Traits implements capabilities.Tool: a program calls the other tools, each with its own traits.
func (Tool) Traits() capabilities.Traits { return capabilities.Traits{Program: true} }

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
type LogEntry = jsproto.Log

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

// Run implements capabilities.Tool.
func (t Tool) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var a struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return capabilities.Result{}, err
	}
	if t.Programs == nil {
		return capabilities.Result{}, errors.New("run_code: no program worker is configured")
	}
	compute, wall := t.Compute, t.Wall
	if compute <= 0 {
		compute = DefaultCompute
	}
	if wall <= 0 {
		wall = DefaultWall
	}
	var names []string
	for _, tool := range t.Tools {
		if tool.Name() != Name {
			names = append(names, tool.Name())
		}
	}
	// Dispatches end with the run: at the wall-clock limit, or when the
	// program ended with calls still in flight.
	dctx, cancel := context.WithTimeout(ctx, wall)
	defer cancel()
	p := &program{tool: t, call: call, dispatcher: capabilities.HostOf(call.Session).Dispatcher}
	d, err := t.Programs.Run(ctx, jsproto.Run{Kind: jsproto.KindCode, Source: a.Code, Tools: names,
		ComputeMS: compute.Milliseconds(), MaxDepth: jsproto.DefaultMaxDepth}, jsworker.Limits{Wall: wall},
		func(batch []jsworker.Request) { p.request(dctx, batch) })
	if err != nil {
		return capabilities.Result{}, fmt.Errorf("run_code: %w", err)
	}
	if d.Fail != "" {
		return capabilities.Result{}, failure(ctx, d)
	}
	logs := d.Logs
	if logs == nil {
		logs = []LogEntry{}
	}
	meta := jsonx.MustMarshal(struct {
		Logs       []LogEntry `json:"logs"`
		Dispatches int        `json:"dispatches"`
	}{logs, d.Calls})
	return capabilities.Result{Content: []session.Block{session.TextBlock(d.Text)}, Meta: meta}, nil
}

var errWall = errors.New("the program ran past its wall-clock limit")

// failure maps a failed run to the tool's failure kinds: exception,
// timeout, abort, and the worker's memory and crash.
func failure(ctx context.Context, d jsproto.Done) error {
	switch {
	case ctx.Err() != nil:
		return runFailed("abort", "the run was cancelled: "+context.Cause(ctx).Error(), d.Logs)
	case d.Fail == jsproto.FailWall:
		return runFailed("timeout", errWall.Error(), d.Logs)
	case d.Fail == jsproto.FailCancelled:
		return runFailed("abort", "the run was cancelled: "+d.Message, d.Logs)
	}
	return runFailed(d.Fail, d.Message, d.Logs)
}
