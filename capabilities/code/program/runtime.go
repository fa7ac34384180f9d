package program

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
)

// toolsObject is the tools global: one async function per callable tool;
// any other name is a function that throws a TypeError naming the
// callable set.
func (p *program) toolsObject() *goja.Object {
	vm := p.realm.VM
	fns := map[string]goja.Value{}
	var names []string
	for _, name := range p.run.Tools {
		names = append(names, name)
		fns[name] = vm.ToValue(func(call goja.FunctionCall) goja.Value {
			return p.dispatch(name, call.Argument(0))
		})
	}
	return vm.NewDynamicObject(&toolSet{vm: vm, fns: fns, names: names})
}

// toolSet is the tools object: read-only, its keys the callable tools.
type toolSet struct {
	vm    *goja.Runtime
	fns   map[string]goja.Value
	names []string
}

func (t *toolSet) Get(key string) goja.Value {
	if f, ok := t.fns[key]; ok {
		return f
	}
	if key == "then" || key == "toJSON" {
		return goja.Undefined()
	}
	msg := fmt.Sprintf("tools.%s is not a tool of this session (callable: %s)", key, strings.Join(t.names, ", "))
	return t.vm.ToValue(func(goja.FunctionCall) goja.Value { panic(t.vm.NewTypeError(msg)) })
}
func (t *toolSet) Set(string, goja.Value) bool { return false }
func (t *toolSet) Has(key string) bool         { _, ok := t.fns[key]; return ok }
func (t *toolSet) Delete(string) bool          { return false }
func (t *toolSet) Keys() []string              { return t.names }

// dispatch is one tools.<name>(args) call: a promise settled with the
// tool's text (rejected with an Error carrying it when the tool failed).
// The call goes to the agent, which runs them one at a time in call order.
func (p *program) dispatch(name string, args goja.Value) goja.Value {
	vm := p.realm.VM
	if goja.IsUndefined(args) {
		args = vm.NewObject()
	}
	if np := p.realm.CheckPlain(args, "args"); np != nil {
		panic(vm.NewTypeError(fmt.Sprintf("tools.%s() arguments must be JSON-serializable — %s", name, np.Error())))
	}
	text, _, err := p.realm.Stringify(args, 0)
	if err != nil {
		panic(vm.NewTypeError(fmt.Sprintf("tools.%s() arguments must be JSON-serializable", name)))
	}
	promise, resolve, reject := vm.NewPromise()
	p.dispatches++
	p.inflight.Add(1)
	p.host.Call(jsproto.Call{ID: int64(p.dispatches), Name: name, Args: text}, func(r jsproto.Reply) {
		p.realm.Post(func() error {
			p.inflight.Add(-1)
			if r.IsError {
				errObj := vm.NewGoError(fmt.Errorf("%s", r.Text))
				_ = errObj.Set("name", "Error")
				return reject(errObj)
			}
			return resolve(r.Text)
		})
	})
	return vm.ToValue(promise)
}

// console is the console global: log/info/warn/error/debug captured.
func (p *program) console() *goja.Object {
	vm := p.realm.VM
	obj := vm.NewObject()
	for _, level := range []string{"log", "info", "warn", "error", "debug"} {
		_ = obj.Set(level, func(call goja.FunctionCall) goja.Value {
			parts := make([]string, len(call.Arguments))
			for i, a := range call.Arguments {
				if s, ok := a.Export().(string); ok {
					if _, isObj := a.(*goja.Object); !isObj {
						parts[i] = s
						continue
					}
				}
				parts[i] = inspect(a, 0, map[*goja.Object]bool{})
			}
			p.capture(jsproto.Log{Source: "console", Level: level, Text: strings.Join(parts, " ")})
			return goja.Undefined()
		})
	}
	return obj
}

// capture records a log entry within the log budget; past it, one
// truncation marker.
func (p *program) capture(e jsproto.Log) {
	if p.cut {
		return
	}
	if p.logBytes+len(e.Text) > DefaultLogBytes {
		p.cut = true
		p.logs = append(p.logs, jsproto.Log{Source: e.Source, Level: e.Level,
			Text: fmt.Sprintf("[output truncated: the program logged more than %d bytes]", DefaultLogBytes)})
		return
	}
	p.logBytes += len(e.Text)
	p.logs = append(p.logs, e)
}

// render is the returned value as the result shows it: a string as is,
// anything else inspected.
func render(v goja.Value) string {
	return inspect(v, 0, map[*goja.Object]bool{})
}

// inspect formats a value like Node's util.inspect (depth 4, cycles as
// [Circular]).
func inspect(v goja.Value, depth int, seen map[*goja.Object]bool) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "null"
	}
	o, isObj := v.(*goja.Object)
	if !isObj {
		switch x := v.Export().(type) {
		case string:
			if depth == 0 {
				return x
			}
			return "'" + strings.ReplaceAll(x, "'", "\\'") + "'"
		case float64:
			if math.IsInf(x, 1) {
				return "Infinity"
			}
			if math.IsInf(x, -1) {
				return "-Infinity"
			}
			return v.String()
		}
		return v.String()
	}
	if _, fn := goja.AssertFunction(o); fn {
		n := o.Get("name")
		if n == nil || n.String() == "" {
			return "[Function (anonymous)]"
		}
		return "[Function: " + n.String() + "]"
	}
	if seen[o] {
		return "[Circular *1]"
	}
	if o.ClassName() == "Error" {
		return o.Get("name").String() + ": " + o.Get("message").String()
	}
	if depth > 4 {
		if o.ClassName() == "Array" {
			return "[Array]"
		}
		return "[Object]"
	}
	seen[o] = true
	defer delete(seen, o)
	if o.ClassName() == "Array" {
		n := o.Get("length").ToInteger()
		if n == 0 {
			return "[]"
		}
		items := make([]string, 0, n)
		for i := int64(0); i < n && i < 100; i++ {
			items = append(items, inspect(o.Get(strconv.FormatInt(i, 10)), depth+1, seen))
		}
		if n > 100 {
			items = append(items, fmt.Sprintf("... %d more items", n-100))
		}
		return "[ " + strings.Join(items, ", ") + " ]"
	}
	keys := o.Keys()
	if len(keys) == 0 {
		return "{}"
	}
	items := make([]string, 0, len(keys))
	for _, k := range keys {
		key := k
		if !identifier(k) {
			key = "'" + k + "'"
		}
		items = append(items, key+": "+inspect(o.Get(k), depth+1, seen))
	}
	return "{ " + strings.Join(items, ", ") + " }"
}

// identifier reports whether s is a plain JavaScript identifier.
func identifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// process is a minimal process object: process.stdout.write and
// process.stderr.write capture {source: "stdout"|"stderr", text}; nothing
// else of a host process is there.
func (p *program) process() *goja.Object {
	vm := p.realm.VM
	proc := vm.NewObject()
	for _, src := range []string{"stdout", "stderr"} {
		stream := vm.NewObject()
		_ = stream.Set("write", func(call goja.FunctionCall) goja.Value {
			a := call.Argument(0)
			text := a.String()
			if _, isObj := a.(*goja.Object); isObj {
				text = inspect(a, 1, map[*goja.Object]bool{})
			}
			p.capture(jsproto.Log{Source: src, Text: text})
			return vm.ToValue(true)
		})
		_ = proc.Set(src, stream)
	}
	return proc
}
