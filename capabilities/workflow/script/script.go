// Package script runs workflow scripts inside the program worker
// (cmd/dsh-acp-worker) on goja (package jsrt), one realm per run. Every
// agent() call is a request to the agent through a [Host], which starts
// the child; the script reaches nothing else. The agent side is package
// workflow.
package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
	"github.com/dsh-acp/dsh-acp/capabilities/jsrt"
	"github.com/dsh-acp/dsh-acp/capabilities/structured"
)

// Host carries a script's agent() calls to the agent.
type Host interface {
	// Spawn queues a child run; reply is called once with its outcome,
	// from any goroutine.
	Spawn(s jsproto.Spawn, reply func(jsproto.Reply))
	// Flush sends the spawns queued since the last Flush, in call order,
	// as one batch. The script calls it at the end of each synchronous
	// stretch (jsrt.Realm.OnStretchEnd) and before it returns.
	Flush()
}

func wfError(code, msg string) jsproto.Done {
	return jsproto.Done{Fail: jsproto.FailException, Code: code, Message: msg}
}

var exportMeta = regexp.MustCompile(`^(?:\s|//[^\n]*\n|/\*[\s\S]*?\*/)*export\s+const\s+meta\b`)

// Run executes the script of job as the body of an async function in a
// fresh realm on the calling goroutine. Cancelling ctx stops it
// (Done.Fail is FailCancelled). Its spawns reach host a synchronous
// stretch at a time (Host.Flush).
func Run(ctx context.Context, job jsproto.Run, host Host) jsproto.Done {
	defer host.Flush()
	limit := time.Duration(job.ComputeMS) * time.Millisecond
	if exportMeta.MatchString(job.Source) {
		return wfError(jsproto.CodeScriptParse, "workflow meta rides the `meta` request field, not the script: "+
			"remove the `export const meta = {...}` statement from the body")
	}
	if err := jsrt.CheckDepth(job.Source, job.MaxDepth, 0); err != nil {
		return wfError(jsproto.CodeScriptParse, "workflow script does not parse: "+err.Error())
	}
	prog, err := goja.Compile("workflow.js", "(async () => {\n"+job.Source+"\n})()", true)
	if err != nil {
		return wfError(jsproto.CodeScriptParse, "workflow script does not parse: "+syntaxText(err))
	}
	r := &run{job: job, host: host, realm: jsrt.New(), fatals: map[*goja.Object]bool{}}
	defer r.realm.Close()
	r.realm.OnStretchEnd = host.Flush
	if err := r.install(job.Args); err != nil {
		return jsproto.Done{Fail: jsproto.FailException, Message: "workflow engine: " + err.Error()}
	}
	// Every stretch after an await is bounded like the first: a script
	// that spins after agent() returned is stopped too.
	r.realm.JobLimit = limit
	stop := context.AfterFunc(ctx, func() { r.realm.Interrupt(context.Cause(ctx)) })
	v, err := r.realm.RunSlice(prog, limit)
	stop()
	if ctx.Err() != nil {
		return r.cancelled(ctx)
	}
	if errors.Is(err, jsrt.ErrSliceLimit) {
		return r.done(wfError(jsproto.CodeRunFailed, fmt.Sprintf("workflow run failed: the script's synchronous part ran over %d ms "+
			"(it must await agent() calls, not spin)", limit.Milliseconds())))
	}
	if err != nil {
		return r.done(wfError(jsproto.CodeRunFailed, "workflow run failed: "+err.Error()))
	}
	p, ok := v.Export().(*goja.Promise)
	if !ok {
		return r.done(jsproto.Done{Fail: jsproto.FailException, Message: "workflow engine: the script body did not yield a promise"})
	}
	settled, err := r.realm.Await(ctx, p, func() bool { return r.pending.Load() == 0 })
	if err != nil {
		if ctx.Err() != nil {
			return r.cancelled(ctx)
		}
		if errors.Is(err, jsrt.ErrStalled) && r.fatal != nil {
			return r.done(wfError(jsproto.CodeRunFailed, "workflow run failed: "+r.realm.ErrorText(r.fatal)))
		}
		if errors.Is(err, jsrt.ErrSliceLimit) {
			return r.done(wfError(jsproto.CodeRunFailed, fmt.Sprintf("workflow run failed: the script computed for more than %d ms "+
				"after an await without yielding (it must await agent() calls, not spin)", limit.Milliseconds())))
		}
		return r.done(wfError(jsproto.CodeRunFailed, "workflow run failed: "+err.Error()))
	}
	if r.fatal != nil {
		return r.done(wfError(jsproto.CodeRunFailed, "workflow run failed: "+r.realm.ErrorText(r.fatal)))
	}
	if settled.Rejected {
		return r.done(wfError(jsproto.CodeRunFailed, "workflow run failed: "+r.realm.ErrorText(settled.Value)))
	}
	val := settled.Value
	if val == nil || goja.IsUndefined(val) {
		val = goja.Null()
	}
	if np := r.realm.CheckPlain(val, "value"); np != nil {
		return r.done(wfError(jsproto.CodeUnserialized, "the workflow's return value is not plain JSON data — "+np.Error()+
			". Return only JSON-serializable objects/arrays/scalars."))
	}
	text, _, err := r.realm.Stringify(val, 2)
	if err != nil {
		return r.done(wfError(jsproto.CodeUnserialized, "the workflow's return value is not plain JSON data — value: "+
			r.realm.ErrorText(jsValue(err))+". Return only JSON-serializable objects/arrays/scalars."))
	}
	return jsproto.Done{Value: text, Agents: r.started}
}

// done stamps the agent count on a finished run.
func (r *run) done(d jsproto.Done) jsproto.Done {
	d.Agents = r.started
	return d
}

// cancelled is the cancelled run's outcome.
func (r *run) cancelled(ctx context.Context) jsproto.Done {
	return r.done(jsproto.Done{Fail: jsproto.FailCancelled, Message: context.Cause(ctx).Error()})
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

// run is one workflow run: its realm, used on the run's goroutine only.
type run struct {
	job   jsproto.Run
	host  Host
	realm *jsrt.Realm

	fatals  map[*goja.Object]bool // thrown fatal errors
	fatal   *goja.Object          // the first fatal error
	phase   string                // default phase of later agent() calls
	started int                   // agents started

	pending atomic.Int64 // children whose result is not yet in the realm
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
	host := vm.NewObject()
	_ = host.Set("fatal", func(msg string) goja.Value { return r.newFatal(msg) })
	_ = host.Set("isFatal", func(v goja.Value) bool {
		o, ok := v.(*goja.Object)
		return ok && r.fatals[o]
	})
	_ = host.Set("cap", func(hook string, n int64) {
		if n > int64(r.job.MaxItemsPerCall) {
			r.throwFatal(fmt.Sprintf("%s() received %d items — over the per-call cap (%d); split the work or raise maxItemsPerCall in the engine config",
				hook, n, r.job.MaxItemsPerCall))
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
	spawn := jsproto.Spawn{Prompt: prompt}
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
					spawn.Model = v.String()
				}
			case "schema":
				text, _, err := r.realm.Stringify(v, 0)
				if err != nil {
					r.throwFatal("agent() schema is outside the supported subset — " + r.realm.ErrorText(jsValue(err)))
				}
				_, err = structured.Parse(json.RawMessage(text))
				if err != nil {
					detail := err.Error()
					var ue *structured.UnsupportedError
					if errors.As(err, &ue) {
						detail = ue.Detail()
					}
					r.throwFatal("agent() schema is outside the supported subset — " + detail)
				}
				spawn.Schema = json.RawMessage(text)
			default:
				if deferredOptions[k] {
					r.throwFatal(fmt.Sprintf("agent() option %q is deferred and not supported by this engine (supported: label, phase, schema, model)", k))
				}
				r.throwFatal(fmt.Sprintf("agent() option %q is not recognized (supported: label, phase, schema, model)", k))
			}
		}
	}
	if r.started >= r.job.MaxTotalAgents {
		r.throwFatal(fmt.Sprintf("this run reached its total agent cap (%d) — a runaway-loop backstop; raise maxTotalAgents in the engine config if the scale is intentional",
			r.job.MaxTotalAgents))
	}
	r.started++
	promise, resolve, reject := vm.NewPromise()
	r.pending.Add(1)
	spawn.ID, spawn.Label, spawn.Phase = int64(r.started), label, phase
	r.host.Spawn(spawn, func(rep jsproto.Reply) {
		r.realm.Post(func() error {
			r.pending.Add(-1)
			switch {
			case rep.Err != "":
				return reject(r.newFatal("agent() could not start a child: " + rep.Err))
			case !rep.Completed:
				return resolve(nil)
			case spawn.Schema != nil:
				if rep.Value == nil {
					return resolve(nil)
				}
				v, perr := r.realm.Parse(string(rep.Value))
				if perr != nil {
					return reject(r.newFatal("child agent run failed: " + perr.Error()))
				}
				return resolve(v)
			}
			return resolve(rep.Text)
		})
	})
	return vm.ToValue(promise)
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
