package code

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/dsh-acp/dsh-acp/session"
)

// toolsObject is the tools global: one async function per callable tool;
// any other name is a function that throws a TypeError naming the
// callable set.
func (p *program) toolsObject(ctx context.Context) *goja.Object {
	vm := p.realm.VM
	fns := map[string]goja.Value{}
	var names []string
	for _, t := range p.tool.Tools {
		name := t.Name()
		if name == Name {
			continue
		}
		names = append(names, name)
		fns[name] = vm.ToValue(func(call goja.FunctionCall) goja.Value {
			return p.dispatch(ctx, name, call.Argument(0))
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
func (p *program) dispatch(ctx context.Context, name string, args goja.Value) goja.Value {
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
	p.mu.Lock()
	p.dispatches++
	n := p.dispatches
	p.inflight++
	p.mu.Unlock()
	subID := fmt.Sprintf("%s:code:%d", p.call.CallID, n)
	prev, done := p.prev, make(chan struct{})
	p.prev = done
	go func() {
		// One at a time, in call order: the n-th waits for the (n-1)-th.
		if prev != nil {
			<-prev
		}
		out := p.runOne(ctx, subID, name, text)
		close(done)
		p.realm.Post(func() error {
			p.mu.Lock()
			p.inflight--
			p.mu.Unlock()
			if out.isError {
				errObj := vm.NewGoError(fmt.Errorf("%s", out.text))
				_ = errObj.Set("name", "Error")
				return reject(errObj)
			}
			return resolve(out.text)
		})
	}()
	return vm.ToValue(promise)
}

type dispatched struct {
	text    string
	isError bool
}

// runOne dispatches a call through the session's pipeline and logs it.
func (p *program) runOne(ctx context.Context, subID, name, args string) dispatched {
	if p.dispatcher == nil {
		return dispatched{text: "Error: run_code requires a calling agent to dispatch tools", isError: true}
	}
	out := p.dispatcher.Dispatch(ctx, p.call.CallID, subID, name, args)
	text := resultText(out.Content)
	summary := text
	if r := []rune(summary); len(r) > summaryChars {
		summary = string(r[:summaryChars]) + "…"
	}
	if p.call.Session != nil && p.call.Session.Log() != nil {
		log := p.call.Session.Log()
		log.Append(TypeDispatch, Dispatch{ParentCallID: p.call.CallID, SubCallID: subID, Name: name,
			Arguments: json.RawMessage(args), IsError: out.IsError, ResultSummary: summary})
		if p.tool.Progress {
			p.progress(log, name, args, out.IsError)
		}
	}
	return dispatched{text: text, isError: out.IsError}
}

// resultText joins a result's blocks: text as is, others as "[<type> content]".
func resultText(content []session.Block) string {
	parts := make([]string, 0, len(content))
	for _, b := range content {
		if b.Type == session.BlockText {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+" content]")
		}
	}
	return strings.Join(parts, "\n")
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
			p.capture(LogEntry{Source: "console", Level: level, Text: strings.Join(parts, " ")})
			return goja.Undefined()
		})
	}
	return obj
}

// capture records a log entry within the log budget; past it, one
// truncation marker.
func (p *program) capture(e LogEntry) {
	if p.cut {
		return
	}
	if p.logBytes+len(e.Text) > DefaultLogBytes {
		p.cut = true
		p.logs = append(p.logs, LogEntry{Source: e.Source, Level: e.Level,
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

// progress logs the dispatches so far as the run_code call's card content:
// one line per tools.<name> call, in call order (✓ done, ✗ failed), with
// its main argument.
func (p *program) progress(log *session.Log, name, args string, failed bool) {
	mark := "✓ "
	if failed {
		mark = "✗ "
	}
	line := mark + name
	var a map[string]any
	if json.Unmarshal([]byte(args), &a) == nil {
		for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query", "description"} {
			if s, ok := a[k].(string); ok && s != "" {
				first, _, _ := strings.Cut(s, "\n")
				if r := []rune(first); len(r) > 80 {
					first = string(r[:79]) + "…"
				}
				line += ": " + first
				break
			}
		}
	}
	p.mu.Lock()
	p.shown = append(p.shown, line)
	lines := p.shown
	if len(lines) > 12 {
		lines = append([]string{fmt.Sprintf("… %d earlier calls", len(lines)-12)}, lines[len(lines)-12:]...)
	}
	text := strings.Join(lines, "\n")
	p.mu.Unlock()
	turn, step := 0, 0
	events := log.Events()
	for i := len(events) - 1; i >= 0; i-- {
		var tc session.ToolCall
		if events[i].Type == session.TypeToolCall && events[i].Decode(&tc) == nil && tc.CallID == p.call.CallID {
			turn, step = tc.Turn, tc.Step
			break
		}
	}
	log.Append(session.TypeToolProgress, session.ToolProgress{Turn: turn, Step: step, CallID: p.call.CallID,
		Content: []session.Block{session.TextBlock(text)}})
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
			p.capture(LogEntry{Source: src, Text: text})
			return vm.ToValue(true)
		})
		_ = proc.Set(src, stream)
	}
	return proc
}
