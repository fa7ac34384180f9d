package acpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// FrameChecker validates one frame the agent wrote, as the answer to
// method ("" when it answers nothing sent); *acpschema.Validator satisfies
// it. An interface, so that the dsh-acp binary, which links this package
// for --replay, does not link the schema compiler and its package
// initializer (3 ms and 1.7 MB in every process).
type FrameChecker interface {
	CheckFrame(line []byte, method string) error
}

// Reporter receives protocol violations; *testing.T satisfies it.
type Reporter interface {
	Errorf(format string, args ...any)
}

// unstableMarkers mark frames only the unstable schema describes.
var unstableMarkers = [][]byte{[]byte(`"sessionUpdate":"subagent_update"`)}

// FrameError is one bad line the agent wrote.
type FrameError struct {
	// Index is the line's index among the received lines.
	Index int
	Line  []byte
	Err   error
}

// Error implements error.
func (e *FrameError) Error() string {
	return fmt.Sprintf("agent frame fails the ACP contract: %v\nframe: %s", e.Err, clipLine(e.Line))
}

// clipLine shortens a frame for a message (as acpschema.ClipLine).
func clipLine(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return string(b)
}

// Unwrap returns the violation.
func (e *FrameError) Unwrap() error { return e.Err }

// Check validates every line the agent wrote so far: each ends with "\n",
// and (with Options.Schema) its envelope key order, the absence of HTML
// escapes and its payload against the ACP schema (acpschema.CheckFrame).
// A response is checked as the answer to the method sent with its id
// (the methods sent with one id answer in order; an error with a null id
// answers none). It returns a *FrameError per violation, nil when every
// line is good.
func (c *Conn) Check() []error {
	c.mu.Lock()
	lines := append([]Line(nil), c.lines...)
	queues := make(map[string][]string, len(c.methods))
	for id, q := range c.methods {
		queues[id] = append([]string(nil), q...)
	}
	c.mu.Unlock()
	var errs []error
	index := -1
	for _, l := range lines {
		if l.Dir != Received {
			continue
		}
		index++
		if l.NoEOL {
			errs = append(errs, &FrameError{Index: index, Line: l.Data, Err: errors.New(`not terminated by \n`)})
		}
		if c.opts.Schema == nil {
			continue
		}
		method := ""
		if id, isResp := responseID(l.Data); isResp && !bytes.HasPrefix(l.Data, []byte(`{"jsonrpc":"2.0","id":null,"error":`)) {
			if q := queues[string(id)]; len(q) > 0 {
				method, queues[string(id)] = q[0], q[1:]
			}
		}
		v := c.opts.Schema
		if c.opts.Unstable != nil && unstableOnly(l.Data) {
			v = c.opts.Unstable
		}
		if err := v.CheckFrame(l.Data, method); err != nil {
			errs = append(errs, &FrameError{Index: index, Line: l.Data, Err: err})
		}
	}
	return errs
}

// Report sends every violation Check finds to r.
func (c *Conn) Report(r Reporter) {
	if h, ok := r.(interface{ Helper() }); ok {
		h.Helper()
	}
	for _, err := range c.Check() {
		r.Errorf("%v", err)
	}
}

func unstableOnly(line []byte) bool {
	for _, m := range unstableMarkers {
		if bytes.Contains(line, m) {
			return true
		}
	}
	return false
}

// responseID returns the raw id of a frame without a method ("null" for a
// null id) and whether it is such a frame.
func responseID(line []byte) (json.RawMessage, bool) {
	var p map[string]json.RawMessage
	if json.Unmarshal(line, &p) != nil {
		return nil, false
	}
	if _, ok := p["method"]; ok {
		return nil, false
	}
	id, ok := p["id"]
	if !ok {
		return nil, false
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	return id, true
}
