package capabilities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Timeouts is the registry's time budget policy: every call gets a budget
// (the tool's own, or the default), a call may ask for another through a
// timeoutMs argument when the tool's schema declares one, and nothing
// exceeds Max. At the budget the call's context ends, which stops the work
// (a process group is killed, an HTTP request aborted); the call's result
// is then a clear error.
type Timeouts struct {
	// Default is the budget of a tool without its own (zero: none).
	Default time.Duration
	// PerTool overrides Default per tool name; a negative value means no
	// budget. A tool it does not name gets its budget by its traits: none
	// for a tool that waits for the user (Traits.Asks), Max (when set) for
	// one that hands work to child agents (Traits.Delegates), else Default.
	PerTool map[string]time.Duration
	// Max caps every budget, a call's timeoutMs included (zero: no cap).
	Max time.Duration
	// Grace is how long past a call's own timeoutMs the registry waits
	// before it stops the call, so a tool that enforces timeoutMs itself
	// (bash's "[timed out after …]") reports first (zero: 5s).
	Grace time.Duration
}

// ErrorTimeout is the error name of a call stopped at its budget.
const (
	ErrorTimeout     = "ToolTimeoutError"
	ErrorTimeoutCode = "TOOL_TIMEOUT"
)

// abandonAfter is how long a tool that ignores its ended context is
// waited for before its result is given up.
const abandonAfter = 5 * time.Second

// budget returns the call's budget (zero: none) and whether it came from
// the call's own timeoutMs.
func (p *Timeouts) budget(t Tool, args json.RawMessage) (time.Duration, bool) {
	d, ok := p.PerTool[t.Name()]
	switch tr := t.Traits(); {
	case ok:
	case tr.Asks:
		d = -1
	case tr.Delegates && p.Max > 0:
		d = p.Max
	default:
		d = p.Default
	}
	if d < 0 {
		return 0, false
	}
	own := false
	if declares(t.Schema(), "timeoutMs") {
		var a struct {
			TimeoutMs *float64 `json:"timeoutMs"`
		}
		if json.Unmarshal(args, &a) == nil && a.TimeoutMs != nil && *a.TimeoutMs > 0 {
			d, own = time.Duration(*a.TimeoutMs*float64(time.Millisecond)), true
		}
	}
	if p.Max > 0 && (d == 0 || d > p.Max) {
		d = p.Max
	}
	return d, own
}

func declares(s *Schema, name string) bool {
	if s == nil {
		return false
	}
	for _, p := range s.Properties {
		if p.Name == name {
			return true
		}
	}
	return false
}

// run runs t within its budget.
func (p *Timeouts) run(ctx context.Context, t Tool, call *Call) (Result, error) {
	d, own := p.budget(t, call.Args)
	if d <= 0 {
		return t.Run(ctx, call)
	}
	stopAt := d
	if own || declares(t.Schema(), "timeoutMs") {
		grace := p.Grace
		if grace <= 0 {
			grace = 5 * time.Second
		}
		stopAt += grace
	}
	tctx, cancel := context.WithTimeoutCause(ctx, stopAt, errBudget)
	defer cancel()
	type ran struct {
		res Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := t.Run(tctx, call)
		done <- ran{res, err}
	}()
	var r ran
	select {
	case r = <-done:
	case <-tctx.Done():
		select {
		case r = <-done:
		case <-time.After(abandonAfter):
			r = ran{err: errBudget}
		}
	}
	if ctx.Err() == nil && errors.Is(context.Cause(tctx), errBudget) && (r.err != nil || tctx.Err() != nil) {
		return Result{}, &CodedError{Name: ErrorTimeout, Code: ErrorTimeoutCode,
			Message: fmt.Sprintf("%s timed out after %s (its time budget) and was stopped", t.Name(), d)}
	}
	return r.res, r.err
}

var errBudget = errors.New("tool time budget exceeded")
