// Package jsrt is the small JavaScript runtime that the workflow engine
// and code mode share: one dop251/goja realm per run, owned by the
// goroutine that created it, with a job queue other goroutines post host
// completions to, a time-limited synchronous slice (goja's Interrupt), a
// wait for a promise that a cancellation always ends within a bounded
// grace, and the plain-JSON boundary (values cross it as JSON text, never
// as host objects).
//
// A goja.Runtime is not goroutine-safe: every method of Realm except Post
// and Interrupt must be called on the owning goroutine.
package jsrt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// Realm is one isolated JavaScript realm: standard built-ins only (no
// console, timers, modules or host APIs unless the caller adds them).
type Realm struct {
	// VM is the goja runtime; use it on the owning goroutine only.
	VM *goja.Runtime
	// JobLimit bounds each posted job's run inside Await (0: none), like
	// RunSlice's limit: a compute budget per synchronous stretch.
	JobLimit time.Duration
	// OnStretchEnd, when set, is called on the owning goroutine at the end
	// of each synchronous stretch Await sees: after every job it runs, and
	// each time it finds no job queued (which ends the stretch that ran
	// before Await). The host may hand on what the stretch asked for
	// then, all of it at once.
	OnStretchEnd func()

	stringify goja.Callable
	parse     goja.Callable
	objProto  *goja.Object
	arrProto  *goja.Object
	errCtor   *goja.Object

	mu     sync.Mutex
	jobs   []func() error
	wake   chan struct{}
	closed bool
}

// New returns a fresh realm. The realm's own JSON functions are kept
// before any script runs, so a script that replaces JSON.stringify cannot
// change what crosses the boundary.
func New() *Realm {
	vm := goja.New()
	vm.SetFieldNameMapper(goja.TagFieldNameMapper("json", true))
	r := &Realm{VM: vm, wake: make(chan struct{}, 1)}
	j := vm.Get("JSON").ToObject(vm)
	r.stringify, _ = goja.AssertFunction(j.Get("stringify"))
	r.parse, _ = goja.AssertFunction(j.Get("parse"))
	r.objProto = vm.Get("Object").ToObject(vm).Get("prototype").ToObject(vm)
	r.arrProto = vm.Get("Array").ToObject(vm).Get("prototype").ToObject(vm)
	r.errCtor = vm.Get("Error").ToObject(vm)
	return r
}

// Post queues f to run on the owning goroutine (inside Await); f returns
// the uncatchable error (an interrupt) of the JavaScript it ran, e.g. a
// promise's resolve. Safe from any goroutine; a closed realm drops it.
func (r *Realm) Post(f func() error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.jobs = append(r.jobs, f)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Close stops accepting posted jobs.
func (r *Realm) Close() {
	r.mu.Lock()
	r.closed = true
	r.jobs = nil
	r.mu.Unlock()
}

// Interrupt stops the script running now (any goroutine); v becomes the
// *goja.InterruptedError's value.
func (r *Realm) Interrupt(v any) { r.VM.Interrupt(v) }

// ErrSliceLimit is the interrupt value of a synchronous slice that ran too
// long.
var ErrSliceLimit = errors.New("the synchronous slice ran over its time limit")

// RunSlice runs prog as one synchronous slice (its microtasks included),
// interrupted after limit (0: no limit). A slice cut off by the limit
// returns an error wrapping ErrSliceLimit.
func (r *Realm) RunSlice(prog *goja.Program, limit time.Duration) (goja.Value, error) {
	return r.Slice(limit, func() (goja.Value, error) { return r.VM.RunProgram(prog) })
}

// Slice runs f (a call into the realm) as one synchronous slice with the
// limit armed, like RunSlice.
func (r *Realm) Slice(limit time.Duration, f func() (goja.Value, error)) (goja.Value, error) {
	if limit > 0 {
		t := time.AfterFunc(limit, func() { r.VM.Interrupt(ErrSliceLimit) })
		defer func() {
			t.Stop()
			r.VM.ClearInterrupt()
		}()
	}
	v, err := f()
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if e, ok := ie.Value().(error); ok {
			return nil, fmt.Errorf("%w", e)
		}
	}
	return v, err
}

// Settled is how a promise ended.
type Settled struct {
	// Value is the fulfilled value or the rejection reason.
	Value goja.Value
	// Rejected is set for a rejected promise.
	Rejected bool
}

// ErrStalled is Await's error when the promise is pending, no job is
// queued and the host has nothing in flight that could post one: the
// promise can never settle.
var ErrStalled = errors.New("the script awaits a promise that nothing can settle")

// Await runs posted jobs until p settles, ctx ends, or a job is
// interrupted. A cancelled ctx interrupts a job that is running and
// returns at once: a promise that nothing will ever settle does not hold
// the caller beyond the running job's interrupt. Await calls OnStretchEnd
// (if set) after each job and, when no job is queued, before it checks
// idle or waits. idle (nil: never) reports
// that the host has no operation in flight; with no job queued either,
// Await returns ErrStalled.
func (r *Realm) Await(ctx context.Context, p *goja.Promise, idle func() bool) (Settled, error) {
	stop := context.AfterFunc(ctx, func() { r.VM.Interrupt(context.Cause(ctx)) })
	defer func() {
		stop()
		r.VM.ClearInterrupt()
	}()
	for {
		switch p.State() {
		case goja.PromiseStateFulfilled:
			return Settled{Value: p.Result()}, nil
		case goja.PromiseStateRejected:
			return Settled{Value: p.Result(), Rejected: true}, nil
		}
		if ctx.Err() != nil {
			return Settled{}, context.Cause(ctx)
		}
		r.mu.Lock()
		jobs := r.jobs
		r.jobs = nil
		r.mu.Unlock()
		if len(jobs) == 0 {
			r.endStretch()
			if idle != nil && idle() {
				return Settled{}, ErrStalled
			}
			select {
			case <-r.wake:
			case <-ctx.Done():
			}
			continue
		}
		for _, j := range jobs {
			err := r.runJob(j)
			r.endStretch()
			if err != nil {
				if ctx.Err() != nil {
					return Settled{}, context.Cause(ctx)
				}
				return Settled{}, err
			}
		}
	}
}

// endStretch calls OnStretchEnd, if set.
func (r *Realm) endStretch() {
	if r.OnStretchEnd != nil {
		r.OnStretchEnd()
	}
}

// runJob runs one posted job, turning an interrupt into an error.
func (r *Realm) runJob(j func() error) (err error) {
	if r.JobLimit > 0 {
		t := time.AfterFunc(r.JobLimit, func() { r.VM.Interrupt(ErrSliceLimit) })
		defer t.Stop()
	}
	defer func() {
		var ie *goja.InterruptedError
		if errors.As(err, &ie) {
			if e, ok := ie.Value().(error); ok {
				err = fmt.Errorf("%w", e)
			}
		}
		if v := recover(); v != nil {
			if e, ok := v.(error); ok && errors.As(e, &ie) {
				err = ie
				return
			}
			if ie, ok := v.(*goja.InterruptedError); ok {
				err = ie
				return
			}
			panic(v)
		}
	}()
	return j()
}

// Stringify is the realm's original JSON.stringify(v, null, indent)
// ("" indent: compact). ok is false when the value has no JSON form
// (undefined, a function).
func (r *Realm) Stringify(v goja.Value, indent int) (string, bool, error) {
	args := []goja.Value{v}
	if indent > 0 {
		args = append(args, goja.Null(), r.VM.ToValue(indent))
	}
	out, err := r.stringify(goja.Undefined(), args...)
	if err != nil {
		return "", false, err
	}
	if goja.IsUndefined(out) {
		return "", false, nil
	}
	return out.String(), true, nil
}

// Parse is the realm's original JSON.parse.
func (r *Realm) Parse(text string) (goja.Value, error) {
	return r.parse(goja.Undefined(), r.VM.ToValue(text))
}

// ErrorText renders a thrown value: "<name>: <message>" for an error
// object, else String(value).
func (r *Realm) ErrorText(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if o, ok := v.(*goja.Object); ok && r.VM.InstanceOf(o, r.errCtor) {
		return o.Get("name").String() + ": " + o.Get("message").String()
	}
	var s string
	func() {
		defer func() {
			if recover() != nil {
				s = "[object]"
			}
		}()
		s = v.String()
	}()
	return s
}

// NotPlain says why a value is not plain JSON data, at Path.
type NotPlain struct {
	Path   string
	Reason string
}

// Error implements error: "<path>: <reason>".
func (e *NotPlain) Error() string { return e.Path + ": " + e.Reason }

// CheckPlain reports whether v is plain JSON data: finite numbers,
// strings, booleans, null, plain objects (prototype Object.prototype or
// null) and dense arrays, without cycles, functions, symbols, bigints or
// undefined inside. root names the value in the violation's path.
func (r *Realm) CheckPlain(v goja.Value, root string) *NotPlain {
	return r.checkPlain(v, root, map[*goja.Object]bool{}, 0)
}

// maxDepth bounds nesting (a deeper value is refused, not a stack
// overflow).
const maxDepth = 1000

func (r *Realm) checkPlain(v goja.Value, path string, stack map[*goja.Object]bool, depth int) *NotPlain {
	if depth > maxDepth {
		return &NotPlain{path, "nested too deeply"}
	}
	switch {
	case v == nil || goja.IsUndefined(v):
		return &NotPlain{path, "undefined is not JSON data"}
	case goja.IsNull(v):
		return nil
	}
	o, ok := v.(*goja.Object)
	if !ok {
		if _, isSym := v.(*goja.Symbol); isSym {
			return &NotPlain{path, "a symbol is not JSON data"}
		}
		switch ev := v.Export().(type) {
		case string, bool, int64:
			return nil
		case float64:
			if math.IsInf(ev, 0) || math.IsNaN(ev) {
				return &NotPlain{path, "a non-finite number is not JSON data"}
			}
			return nil
		}
		return &NotPlain{path, "a bigint is not JSON data"}
	}
	if _, isFn := goja.AssertFunction(o); isFn {
		return &NotPlain{path, "a function is not JSON data"}
	}
	if stack[o] {
		return &NotPlain{path, "a circular reference is not JSON data"}
	}
	stack[o] = true
	defer delete(stack, o)
	proto := o.Prototype()
	switch {
	case proto != nil && proto.SameAs(r.arrProto):
		n := o.Get("length").ToInteger()
		own := map[string]bool{}
		for _, k := range o.GetOwnPropertyNames() {
			own[k] = true
		}
		for i := int64(0); i < n; i++ {
			key := strconv.FormatInt(i, 10)
			ip := path + "[" + key + "]"
			if !own[key] {
				return &NotPlain{ip, "a sparse array hole is not JSON data"}
			}
			if np := r.checkPlain(o.Get(key), ip, stack, depth+1); np != nil {
				return np
			}
		}
		return nil
	case proto == nil || proto.SameAs(r.objProto):
		if len(o.Symbols()) > 0 {
			return &NotPlain{path, "a symbol-keyed property is not JSON data"}
		}
		for _, k := range o.Keys() {
			if np := r.checkPlain(o.Get(k), path+"."+k, stack, depth+1); np != nil {
				return np
			}
		}
		return nil
	}
	name := "an object"
	if c := o.Get("constructor"); c != nil {
		if co, ok := c.(*goja.Object); ok {
			if n := co.Get("name"); n != nil && n.String() != "" {
				name = "a " + n.String()
			}
		}
	}
	return &NotPlain{path, name + " (exotic prototype) is not JSON data"}
}
