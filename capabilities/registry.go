package capabilities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// Registry holds the tools a session offers, in wire order (lexicographic by
// name), and runs every call through one pipeline.
type Registry struct {
	tools    []Tool
	byName   map[string]Tool
	spill    *Spill
	timeouts *Timeouts
	sections []Section
	src      *sources // tools that come and go (see Attach); shared with the registries With derives
	tail     int      // how many of tools are With's extra ones, kept last on the wire
}

// WithSpill makes every result over the spill cap a bounded view plus a
// saved file (see Spill); it returns r.
func (r *Registry) WithSpill(s Spill) *Registry {
	r.spill = &s
	return r
}

// WithTimeouts gives every call a time budget (see Timeouts); it returns r.
func (r *Registry) WithTimeouts(t Timeouts) *Registry {
	r.timeouts = &t
	return r
}

// WithSections adds prompt sections that belong to the session's tools
// but to no single tool (project instructions, the skill catalogue); it
// returns r.
func (r *Registry) WithSections(secs ...Section) *Registry {
	r.sections = append(r.sections, secs...)
	return r
}

// Sections returns the sections added with WithSections.
func (r *Registry) Sections() []Section { return r.sections }

// NewRegistry returns a registry of tools sorted by name.
func NewRegistry(tools ...Tool) *Registry {
	r := &Registry{byName: map[string]Tool{}, src: &sources{}}
	for _, t := range tools {
		r.byName[t.Name()] = t
	}
	for _, t := range r.byName {
		r.tools = append(r.tools, t)
	}
	sort.Slice(r.tools, func(i, j int) bool { return r.tools[i].Name() < r.tools[j].Name() })
	return r
}

// Tools returns the tools in wire order (attached sources' included).
func (r *Registry) Tools() []Tool { return r.allTools() }

// Lookup returns the tool named name.
func (r *Registry) Lookup(name string) (Tool, bool) { return r.lookup(name) }

// ParseArgs turns a streamed arguments string into the value tools see:
// "" is {}, unparseable text becomes a JSON string of the raw text.
func ParseArgs(arguments string) json.RawMessage {
	if arguments == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(arguments)) {
		if c, err := jsonx.Compact([]byte(arguments)); err == nil {
			return c
		}
	}
	return jsonx.MustMarshal(arguments)
}

// Outcome is a finished call, ready to become a tool/result event.
type Outcome struct {
	Content []session.Block
	IsError bool
	Error   *session.ErrorInfo
	Meta    json.RawMessage
}

// Execute runs one call: lookup, argument validation, the tool, and error
// mapping (tools contract § 2), then the spill step.
func (r *Registry) Execute(ctx context.Context, env Env, callID, name, arguments string) Outcome {
	out := r.execute(ctx, env, callID, name, arguments)
	if r.spill != nil {
		out = r.spill.apply(env, callID, name, out)
	}
	return out
}

func (r *Registry) execute(ctx context.Context, env Env, callID, name, arguments string) Outcome {
	t, ok := r.lookup(name)
	if !ok {
		return errorOutcome(fmt.Sprintf("unknown tool %q", name), &session.ErrorInfo{Name: "ToolNotFoundError", Code: "UNKNOWN_TOOL"})
	}
	args := ParseArgs(arguments)
	if v := t.Schema().Validate(args); len(v) > 0 {
		return errorOutcome("invalid arguments: "+Violations(v), &session.ErrorInfo{Name: "ToolArgsError", Code: "INVALID_ARGS"})
	}
	call := &Call{CallID: callID, Name: name, Args: args, Session: env}
	var res Result
	var err error
	if r.timeouts != nil {
		res, err = r.timeouts.run(ctx, t, call)
	} else {
		res, err = t.Run(ctx, call)
	}
	if err != nil {
		var ce *CodedError
		if errors.As(err, &ce) {
			return errorOutcome(ce.Message, &session.ErrorInfo{Name: ce.Name, Code: ce.Code})
		}
		return errorOutcome(err.Error(), nil)
	}
	content := res.Content
	if content == nil {
		content = []session.Block{}
	}
	return Outcome{Content: content, Meta: res.Meta}
}

func errorOutcome(msg string, info *session.ErrorInfo) Outcome {
	return Outcome{Content: []session.Block{session.TextBlock("Error: " + msg)}, IsError: true, Error: info}
}

// Closer is implemented by tools holding resources beyond a call (e.g.
// background processes); the registry closes them with their session.
type Closer interface {
	Close(ctx context.Context) error
}

// Close releases every tool's resources.
func (r *Registry) Close(ctx context.Context) error {
	var errs []error
	for _, t := range r.tools {
		if c, ok := t.(Closer); ok {
			if err := c.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("close tool %s: %w", t.Name(), err))
			}
		}
	}
	errs = append(errs, r.closeSources(ctx)...)
	return errors.Join(errs...)
}

// With returns a registry holding r's tools followed by extra, in the
// order given: a tool offered to one agent only (structured_output) is
// appended last to that agent's wire list. An extra tool replaces one of
// r's by name. Everything else r is composed of carries over: its spill
// step, its time budgets, its prompt sections (project instructions, the
// skill catalogue) and its attached sources, which the two registries
// share (a source attached to either is offered by both, and closing
// either closes it once).
func (r *Registry) With(extra ...Tool) *Registry {
	out := &Registry{byName: make(map[string]Tool, len(r.tools)+len(extra)),
		spill: r.spill, timeouts: r.timeouts, sections: append([]Section(nil), r.sections...), src: r.src}
	names := make(map[string]bool, len(extra))
	for _, t := range extra {
		names[t.Name()] = true
	}
	for _, t := range r.tools {
		if !names[t.Name()] {
			out.tools = append(out.tools, t)
			out.byName[t.Name()] = t
		}
	}
	for _, t := range extra {
		out.tools = append(out.tools, t)
		out.byName[t.Name()] = t
	}
	out.tail = min(len(out.tools), r.tail+len(extra))
	return out
}
