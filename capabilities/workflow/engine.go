package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/jsrt"
	"github.com/dsh-acp/dsh-acp/capabilities/structured"
	"github.com/dsh-acp/dsh-acp/capabilities/subagent"
)

// Engine limits (subagents-workflows § 4).
const (
	// DefaultMaxTotalAgents is the per-run agent cap, a runaway-loop backstop.
	DefaultMaxTotalAgents = 1000
	// DefaultMaxItemsPerCall caps the arrays given to parallel and pipeline.
	DefaultMaxItemsPerCall = 4096
	// DefaultSyncLimit bounds the script's initial synchronous slice.
	DefaultSyncLimit = 5000 * time.Millisecond
	// DefaultGrace bounds how long a finished or cancelled run waits for
	// its children to wind down.
	DefaultGrace = 5 * time.Second
)

// Config sets the engine's limits; zero fields take the defaults.
type Config struct {
	// Concurrency is how many children run at once (default
	// min(16, max(1, CPU cores − 2))).
	Concurrency int
	// MaxTotalAgents caps the agents one run starts.
	MaxTotalAgents int
	// MaxItemsPerCall caps the items of one parallel or pipeline call.
	MaxItemsPerCall int
	// SyncLimit bounds the initial synchronous slice.
	SyncLimit time.Duration
	// Grace bounds the wait for children after the run settles.
	Grace time.Duration
	// StructuredNudges is how many times a structured child that finishes
	// without a capture is told to call structured_output (0: upstream).
	StructuredNudges int
	// OnAgent, when set, is told about each child when agent() starts it
	// (on the run's goroutine, in call order) and when it ends (on the
	// child's goroutine): progress, like upstream's bus-only
	// workflow/agent-* events.
	OnAgent func(AgentEvent)
}

// AgentEvent is one child's progress.
type AgentEvent struct {
	// Index numbers the run's agents from 1.
	Index int
	// Label is the agent's label (default: the prompt's first line, cut).
	Label string
	// Phase is the phase it runs in.
	Phase string
	// Done is set when it ended, with its stop reason.
	Done bool
	Stop string
}

func (c Config) withDefaults() Config {
	if c.Concurrency <= 0 {
		c.Concurrency = min(16, max(1, runtime.NumCPU()-2))
	}
	if c.MaxTotalAgents <= 0 {
		c.MaxTotalAgents = DefaultMaxTotalAgents
	}
	if c.MaxItemsPerCall <= 0 {
		c.MaxItemsPerCall = DefaultMaxItemsPerCall
	}
	if c.SyncLimit <= 0 {
		c.SyncLimit = DefaultSyncLimit
	}
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	return c
}

// Error codes of WorkflowError.
const (
	CodeMetaInvalid  = "META_INVALID"
	CodeScriptParse  = "SCRIPT_PARSE"
	CodeUnserialized = "RESULT_UNSERIALIZABLE"
	CodeRunFailed    = "RUN_FAILED"
	CodeCancelled    = "CANCELLED"
)

// wfError is a WorkflowError with a code.
func wfError(code, msg string) error {
	return &capabilities.CodedError{Name: "WorkflowError", Code: code, Message: msg}
}

// Outcome is a completed run.
type Outcome struct {
	// Value is JSON.stringify(value, null, 2) of the returned value.
	Value string
	// Agents is how many agents the run started.
	Agents int
}

var exportMeta = regexp.MustCompile(`^(?:\s|//[^\n]*\n|/\*[\s\S]*?\*/)*export\s+const\s+meta\b`)

// Run executes script as the body of an async function in a fresh realm
// on the calling goroutine, with children started through sp. args (nil:
// undefined) is deep-copied into the realm.
func (c Config) Run(ctx context.Context, sp capabilities.Spawner, script string, args json.RawMessage) (Outcome, error) {
	c = c.withDefaults()
	if exportMeta.MatchString(script) {
		return Outcome{}, wfError(CodeScriptParse, "workflow meta rides the `meta` request field, not the script: "+
			"remove the `export const meta = {...}` statement from the body")
	}
	prog, err := goja.Compile("workflow.js", "(async () => {\n"+script+"\n})()", true)
	if err != nil {
		return Outcome{}, wfError(CodeScriptParse, "workflow script does not parse: "+syntaxText(err))
	}
	r := &run{cfg: c, sp: sp, realm: jsrt.New(), fatals: map[*goja.Object]bool{}}
	runCtx, cancel := context.WithCancelCause(ctx)
	r.ctx = runCtx
	defer func() {
		cancel(errors.New("workflow run ended"))
		r.realm.Close()
		r.waitChildren()
	}()
	if err := r.install(args); err != nil {
		return Outcome{}, fmt.Errorf("workflow engine: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { r.realm.Interrupt(context.Cause(ctx)) })
	v, err := r.realm.RunSlice(prog, c.SyncLimit)
	stop()
	if ctx.Err() != nil {
		return Outcome{}, cancelled(ctx)
	}
	if errors.Is(err, jsrt.ErrSliceLimit) {
		return Outcome{}, wfError(CodeRunFailed, fmt.Sprintf("workflow run failed: the script's synchronous part ran over %d ms "+
			"(it must await agent() calls, not spin)", c.SyncLimit.Milliseconds()))
	}
	if err != nil {
		return Outcome{}, wfError(CodeRunFailed, "workflow run failed: "+err.Error())
	}
	p, ok := v.Export().(*goja.Promise)
	if !ok {
		return Outcome{}, errors.New("workflow engine: the script body did not yield a promise")
	}
	settled, err := r.realm.Await(ctx, p, func() bool { return r.pending.Load() == 0 })
	if err != nil {
		if ctx.Err() != nil {
			return Outcome{}, cancelled(ctx)
		}
		if errors.Is(err, jsrt.ErrStalled) && r.fatal != nil {
			return Outcome{}, wfError(CodeRunFailed, "workflow run failed: "+r.realm.ErrorText(r.fatal))
		}
		return Outcome{}, wfError(CodeRunFailed, "workflow run failed: "+err.Error())
	}
	if r.fatal != nil {
		return Outcome{}, wfError(CodeRunFailed, "workflow run failed: "+r.realm.ErrorText(r.fatal))
	}
	if settled.Rejected {
		return Outcome{}, wfError(CodeRunFailed, "workflow run failed: "+r.realm.ErrorText(settled.Value))
	}
	val := settled.Value
	if val == nil || goja.IsUndefined(val) {
		val = goja.Null()
	}
	if np := r.realm.CheckPlain(val, "value"); np != nil {
		return Outcome{}, wfError(CodeUnserialized, "the workflow's return value is not plain JSON data — "+np.Error()+
			". Return only JSON-serializable objects/arrays/scalars.")
	}
	text, _, err := r.realm.Stringify(val, 2)
	if err != nil {
		return Outcome{}, wfError(CodeUnserialized, "the workflow's return value is not plain JSON data — value: "+
			r.realm.ErrorText(jsValue(err))+". Return only JSON-serializable objects/arrays/scalars.")
	}
	r.mu.Lock()
	n := r.started
	r.mu.Unlock()
	return Outcome{Value: text, Agents: n}, nil
}

// cancelled is the cancelled run's error.
func cancelled(ctx context.Context) error {
	return wfError(CodeCancelled, "workflow run was cancelled (workflow run cancelled: "+context.Cause(ctx).Error()+")")
}

// syntaxText is goja's syntax error text without the file prefix.
func syntaxText(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "SyntaxError: ")
	return "SyntaxError: " + strings.TrimPrefix(s, "workflow.js: ")
}

// jsValue extracts a thrown value from a goja error.
func jsValue(err error) goja.Value {
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return ex.Value()
	}
	return nil
}

// run is one workflow run: its realm (used on the run's goroutine only)
// and the children it started.
type run struct {
	cfg   Config
	sp    capabilities.Spawner
	realm *jsrt.Realm
	ctx   context.Context

	fatals map[*goja.Object]bool // thrown fatal errors (realm goroutine only)
	fatal  *goja.Object          // the first fatal error
	phase  string                // default phase of later agent() calls

	pending atomic.Int64 // children whose result is not yet in the realm

	mu       sync.Mutex
	started  int
	sem      chan struct{}
	children sync.WaitGroup
}

// waitChildren waits (up to the grace) for started children to end.
func (r *run) waitChildren() {
	done := make(chan struct{})
	go func() {
		r.children.Wait()
		close(done)
	}()
	t := time.NewTimer(r.cfg.Grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// throwFatal records and throws a fatal error (never turned into null).
func (r *run) throwFatal(msg string) {
	panic(r.newFatal(msg))
}

// newFatal makes and records a fatal error object.
func (r *run) newFatal(msg string) *goja.Object {
	vm := r.realm.VM
	ctor, _ := goja.AssertConstructor(vm.Get("Error"))
	o, err := ctor(nil, vm.ToValue(msg))
	if err != nil {
		panic(err)
	}
	r.fatals[o] = true
	if r.fatal == nil {
		r.fatal = o
	}
	return o
}

// prelude builds parallel and pipeline over host checks; the host object
// stays in the closure, never in the realm's globals.
const prelude = `(function (host) {
  "use strict";
  const isArray = Array.isArray, all = Promise.all.bind(Promise);
  async function settle(f, mk) {
    try { return await mk(); } catch (e) { if (host.isFatal(e)) throw e; return null; }
  }
  async function parallel(thunks) {
    if (!isArray(thunks)) throw host.fatal("parallel() requires an array of zero-argument functions");
    host.cap("parallel", thunks.length);
    for (let i = 0; i < thunks.length; i++) {
      if (typeof thunks[i] !== "function") throw host.fatal("parallel() item " + i + " is not a function");
    }
    const runs = [];
    for (let i = 0; i < thunks.length; i++) { const t = thunks[i]; runs.push(settle(t, () => t())); }
    return all(runs);
  }
  async function pipeline(items, ...stages) {
    if (!isArray(items)) throw host.fatal("pipeline() requires an items array");
    host.cap("pipeline", items.length);
    if (stages.length === 0) throw host.fatal("pipeline() requires at least one stage function");
    for (let i = 0; i < stages.length; i++) {
      if (typeof stages[i] !== "function") throw host.fatal("pipeline() stage " + i + " is not a function");
    }
    const runs = [];
    for (let i = 0; i < items.length; i++) {
      const item = items[i], index = i;
      runs.push(settle(null, async () => {
        let prev = item;
        for (let s = 0; s < stages.length; s++) prev = await stages[s](prev, item, index);
        return prev;
      }));
    }
    return all(runs);
  }
  return { parallel, pipeline };
})`

// install defines the workflow globals: agent, parallel, pipeline, phase,
// log and args.
func (r *run) install(args json.RawMessage) error {
	vm := r.realm.VM
	r.sem = make(chan struct{}, r.cfg.Concurrency)
	host := vm.NewObject()
	_ = host.Set("fatal", func(msg string) goja.Value { return r.newFatal(msg) })
	_ = host.Set("isFatal", func(v goja.Value) bool {
		o, ok := v.(*goja.Object)
		return ok && r.fatals[o]
	})
	_ = host.Set("cap", func(hook string, n int64) {
		if n > int64(r.cfg.MaxItemsPerCall) {
			r.throwFatal(fmt.Sprintf("%s() received %d items — over the per-call cap (%d); split the work or raise maxItemsPerCall in the engine config",
				hook, n, r.cfg.MaxItemsPerCall))
		}
	})
	f, err := vm.RunString(prelude)
	if err != nil {
		return err
	}
	mk, _ := goja.AssertFunction(f)
	hooks, err := mk(goja.Undefined(), host)
	if err != nil {
		return err
	}
	ho := hooks.ToObject(vm)
	for _, name := range []string{"parallel", "pipeline"} {
		if err := vm.Set(name, ho.Get(name)); err != nil {
			return err
		}
	}
	if err := vm.Set("agent", r.agent); err != nil {
		return err
	}
	if err := vm.Set("phase", func(call goja.FunctionCall) goja.Value {
		t := call.Argument(0)
		if !isString(t) || t.String() == "" {
			r.throwFatal("phase() requires a non-empty title string")
		}
		r.phase = t.String()
		return goja.Undefined()
	}); err != nil {
		return err
	}
	if err := vm.Set("log", func(call goja.FunctionCall) goja.Value {
		if !isString(call.Argument(0)) {
			r.throwFatal("log() requires a message string")
		}
		return goja.Undefined()
	}); err != nil {
		return err
	}
	argv := goja.Undefined()
	if len(args) > 0 && string(args) != "null" {
		v, err := r.realm.Parse(string(args))
		if err != nil {
			return err
		}
		argv = v
	}
	return vm.Set("args", argv)
}

// isString reports whether v is a string primitive.
func isString(v goja.Value) bool {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return false
	}
	_, ok := v.Export().(string)
	_, isObj := v.(*goja.Object)
	return ok && !isObj
}

// Option names of agent().
var deferredOptions = map[string]bool{"effort": true, "isolation": true, "agentType": true}

// agent is the agent(prompt, opts?) global.
func (r *run) agent(call goja.FunctionCall) goja.Value {
	vm := r.realm.VM
	pv := call.Argument(0)
	if !isString(pv) || pv.String() == "" {
		r.throwFatal("agent() requires a non-empty prompt string")
	}
	prompt := pv.String()
	req := subagent.Request{Prompt: prompt}
	label, phase := defaultLabel(prompt), r.phase
	if ov := call.Argument(1); !goja.IsUndefined(ov) {
		o, ok := ov.(*goja.Object)
		if _, isFn := goja.AssertFunction(ov); !ok || isFn || goja.IsNull(ov) || vm.InstanceOf(o, vm.Get("Array").ToObject(vm)) {
			r.throwFatal("agent() options must be an object")
		}
		if np := r.realm.CheckPlain(ov, "options"); np != nil {
			r.throwFatal("agent() options must be plain JSON data — " + np.Error())
		}
		for _, k := range o.Keys() {
			v := o.Get(k)
			switch k {
			case "label", "phase", "model":
				if !isString(v) {
					r.throwFatal(fmt.Sprintf("agent() option %q must be a string", k))
				}
				switch k {
				case "label":
					label = v.String()
				case "phase":
					phase = v.String()
				case "model":
					req.Model = v.String()
				}
			case "schema":
				text, _, err := r.realm.Stringify(v, 0)
				if err != nil {
					r.throwFatal("agent() schema is outside the supported subset — " + r.realm.ErrorText(jsValue(err)))
				}
				s, err := structured.Parse(json.RawMessage(text))
				if err != nil {
					detail := err.Error()
					var ue *structured.UnsupportedError
					if errors.As(err, &ue) {
						detail = ue.Detail()
					}
					r.throwFatal("agent() schema is outside the supported subset — " + detail)
				}
				req.Schema = s
				req.Nudges = r.cfg.StructuredNudges
			default:
				if deferredOptions[k] {
					r.throwFatal(fmt.Sprintf("agent() option %q is deferred and not supported by this engine (supported: label, phase, schema, model)", k))
				}
				r.throwFatal(fmt.Sprintf("agent() option %q is not recognized (supported: label, phase, schema, model)", k))
			}
		}
	}
	r.mu.Lock()
	if r.started >= r.cfg.MaxTotalAgents {
		r.mu.Unlock()
		r.throwFatal(fmt.Sprintf("this run reached its total agent cap (%d) — a runaway-loop backstop; raise maxTotalAgents in the engine config if the scale is intentional",
			r.cfg.MaxTotalAgents))
	}
	r.started++
	index := r.started
	r.mu.Unlock()
	promise, resolve, reject := vm.NewPromise()
	r.children.Add(1)
	r.pending.Add(1)
	ev := AgentEvent{Index: index, Label: label, Phase: phase}
	if r.cfg.OnAgent != nil {
		r.cfg.OnAgent(ev) // in call order, on the realm's goroutine
	}
	go r.runChild(req, ev, resolve, reject)
	return vm.ToValue(promise)
}

// runChild runs one child off the realm's goroutine and posts its result.
func (r *run) runChild(req subagent.Request, ev AgentEvent, resolve, reject func(any) error) {
	defer r.children.Done()
	select {
	case r.sem <- struct{}{}:
	case <-r.ctx.Done():
		r.realm.Post(func() error {
			r.pending.Add(-1)
			return resolve(nil)
		})
		return
	}
	out, err := subagent.Run(r.ctx, r.sp, req)
	<-r.sem
	if r.cfg.OnAgent != nil {
		ev.Done, ev.Stop = true, out.Stop
		r.cfg.OnAgent(ev)
	}
	r.realm.Post(func() error {
		r.pending.Add(-1)
		switch {
		case err != nil:
			return reject(r.newFatal("agent() could not start a child: " + err.Error()))
		case out.Stop != subagent.StopCompleted:
			return resolve(nil)
		case req.Schema != nil:
			if out.Value == nil {
				return resolve(nil)
			}
			v, perr := r.realm.Parse(string(out.Value))
			if perr != nil {
				return reject(r.newFatal("child agent run failed: " + perr.Error()))
			}
			return resolve(v)
		}
		return resolve(out.Text)
	})
}

// defaultLabel is the prompt's first line, cut to 47 characters and "…"
// when longer than 48.
func defaultLabel(prompt string) string {
	line, _, _ := strings.Cut(prompt, "\n")
	rs := []rune(line)
	if len(rs) > 48 {
		return string(rs[:47]) + "…"
	}
	return line
}
