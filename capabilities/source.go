package capabilities

import (
	"context"
	"sort"
	"sync"
)

// ToolSource supplies tools that come and go while a session lives (an
// MCP server's tools appear once it has connected and vanish when it
// stops). Tools must be safe to call from any goroutine and cheap: the
// registry asks before every model call.
type ToolSource interface {
	Tools() []Tool
}

// sources holds a registry's attached tool sources.
type sources struct {
	mu     sync.Mutex
	list   []ToolSource
	closed bool // the registry was closed: a late source is closed at once
}

// Attach adds a source whose tools the registry offers beside its own, in
// wire order (a registry tool wins a name clash). If the source is a
// Closer it is closed with the registry (at once when the registry was
// closed already). Attach may be called while the registry is in use.
func (r *Registry) Attach(src ToolSource) {
	r.src.mu.Lock()
	closed := r.src.closed
	if !closed {
		r.src.list = append(r.src.list, src)
	}
	r.src.mu.Unlock()
	if c, ok := src.(Closer); ok && closed {
		_ = c.Close(context.Background())
	}
}

// attached returns the attached sources.
func (r *Registry) attached() []ToolSource {
	if r.src == nil {
		return nil
	}
	r.src.mu.Lock()
	defer r.src.mu.Unlock()
	return r.src.list
}

// allTools is the registry's tools plus the attached sources' tools, in
// wire order; without sources it is the registry's own slice.
func (r *Registry) allTools() []Tool {
	srcs := r.attached()
	if len(srcs) == 0 {
		return r.tools
	}
	head, tail := r.tools[:len(r.tools)-r.tail], r.tools[len(r.tools)-r.tail:]
	out := append([]Tool(nil), head...)
	for _, s := range srcs {
		for _, t := range s.Tools() {
			if _, clash := r.byName[t.Name()]; !clash {
				out = append(out, t)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return append(out, tail...) // With's extra tools stay last
}

// lookup finds a tool by name: the registry's own first, then the
// sources'.
func (r *Registry) lookup(name string) (Tool, bool) {
	if t, ok := r.byName[name]; ok {
		return t, true
	}
	for _, s := range r.attached() {
		for _, t := range s.Tools() {
			if t.Name() == name {
				return t, true
			}
		}
	}
	return nil, false
}

// closeSources closes the attached sources that are Closers.
func (r *Registry) closeSources(ctx context.Context) []error {
	if r.src == nil {
		return nil
	}
	r.src.mu.Lock()
	r.src.closed = true
	list := r.src.list
	r.src.list = nil
	r.src.mu.Unlock()
	var errs []error
	for _, s := range list {
		if c, ok := s.(Closer); ok {
			if err := c.Close(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// Settler is a ToolSource whose tools may still be arriving (servers
// connecting in the background).
type Settler interface {
	// Settle waits until the source's tool set is complete or ctx ends.
	Settle(ctx context.Context)
}

// Settle waits until every attached Settler has settled or ctx ends, so a
// model call about to be made can see tools that are a moment away.
func (r *Registry) Settle(ctx context.Context) {
	for _, s := range r.attached() {
		if st, ok := s.(Settler); ok {
			st.Settle(ctx)
		}
	}
}
