// Package program runs run_code programs inside the program worker
// (cmd/dsh-acp-worker): TypeScript becomes JavaScript with evanw/esbuild's
// transform and runs on goja (package jsrt). Every tools.<name> call is a
// request to the agent through a [Host]; the program itself reaches
// nothing else. The agent side is package code.
package program

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
	"github.com/evanw/esbuild/pkg/api"

	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
	"github.com/dsh-acp/dsh-acp/capabilities/jsrt"
)

// Limits of a run's output (subagents-workflows § 5).
const (
	DefaultLogBytes = 65536
	DefaultValueLen = 32768
)

// Host carries a program's tool calls to the agent.
type Host interface {
	// Call queues c; reply is called once with the answer, from any
	// goroutine.
	Call(c jsproto.Call, reply func(jsproto.Reply))
	// Flush sends the calls queued since the last Flush, in call order,
	// as one batch. The program calls it at the end of each synchronous
	// stretch (jsrt.Realm.OnStretchEnd) and before it returns.
	Flush()
}

// Transform turns the program (TypeScript, a function body) into a
// JavaScript async function expression goja runs. A syntax error names
// the program's line and column; a program nested deeper than maxDepth
// (0: no bound) is refused before any parser sees it.
func Transform(code string, maxDepth int) (string, error) {
	if err := jsrt.CheckDepth(code, maxDepth, 0); err != nil {
		return "", err
	}
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

// program is one run_code run.
type program struct {
	run   jsproto.Run
	host  Host
	realm *jsrt.Realm

	logs     []jsproto.Log
	logBytes int
	cut      bool

	dispatches int          // realm goroutine only
	inflight   atomic.Int64 // calls not yet answered
}

// Run runs the program of r on the calling goroutine; cancelling ctx stops
// it (Done.Fail is FailCancelled, or FailWall when the cause is ErrWall).
// Its calls reach host a synchronous stretch at a time (Host.Flush).
func Run(ctx context.Context, r jsproto.Run, host Host) jsproto.Done {
	p := &program{run: r, host: host, realm: jsrt.New()}
	defer p.realm.Close()
	defer host.Flush()
	p.realm.OnStretchEnd = host.Flush
	return p.exec(ctx)
}

// ErrWall is the cancellation cause of a run past its wall-clock limit.
var ErrWall = errors.New("the program ran past its wall-clock limit")

func (p *program) fail(kind, msg string) jsproto.Done {
	return jsproto.Done{Fail: kind, Message: msg, Logs: p.logs, Calls: p.dispatches}
}

func (p *program) exec(ctx context.Context) jsproto.Done {
	compute := time.Duration(p.run.ComputeMS) * time.Millisecond
	js, err := Transform(p.run.Source, p.run.MaxDepth)
	if err != nil {
		return p.fail(jsproto.FailException, err.Error())
	}
	prog, err := goja.Compile("program.js", js, true)
	if err != nil {
		return p.fail(jsproto.FailException, err.Error())
	}
	p.realm.JobLimit = compute
	fn, err := p.realm.RunSlice(prog, compute)
	if err != nil {
		return p.fail(jsproto.FailException, err.Error())
	}
	f, _ := goja.AssertFunction(fn)
	var v goja.Value
	stop := context.AfterFunc(ctx, func() { p.realm.Interrupt(context.Cause(ctx)) })
	_, callErr := p.realm.Slice(compute, func() (goja.Value, error) {
		var e error
		v, e = f(goja.Undefined(), p.toolsObject(), p.console(), p.process())
		return v, e
	})
	stop()
	if callErr != nil {
		return p.failure(ctx, callErr)
	}
	promise, ok := v.Export().(*goja.Promise)
	if !ok {
		return p.fail(jsproto.FailException, "the program did not run as an async function")
	}
	settled, err := p.realm.Await(ctx, promise, func() bool { return p.inflight.Load() == 0 })
	if err != nil {
		return p.failure(ctx, err)
	}
	if settled.Rejected {
		return p.fail(jsproto.FailException, p.thrown(settled.Value))
	}
	var parts []string
	if len(p.logs) > 0 {
		lines := make([]string, len(p.logs))
		for i, l := range p.logs {
			lines[i] = l.Text
		}
		parts = append(parts, strings.Join(lines, "\n"))
	}
	if !goja.IsUndefined(settled.Value) {
		parts = append(parts, cutValue(render(settled.Value)))
	}
	text := strings.Join(parts, "\n")
	if text == "" {
		text = "(run_code completed with no output)"
	}
	return jsproto.Done{Text: text, Logs: p.logs, Calls: p.dispatches}
}

// failure maps a run error to the tool's failure kinds.
func (p *program) failure(ctx context.Context, err error) jsproto.Done {
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrWall):
		return p.fail(jsproto.FailWall, ErrWall.Error())
	case ctx.Err() != nil:
		return p.fail(jsproto.FailCancelled, context.Cause(ctx).Error())
	case errors.Is(err, jsrt.ErrSliceLimit):
		return p.fail(jsproto.FailTimeout, fmt.Sprintf("the program computed for more than %s without yielding",
			time.Duration(p.run.ComputeMS)*time.Millisecond))
	case errors.Is(err, jsrt.ErrStalled):
		return p.fail(jsproto.FailException, "the program awaits a promise that nothing can settle")
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return p.fail(jsproto.FailException, p.thrown(ex.Value()))
	}
	return p.fail(jsproto.FailException, err.Error())
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
