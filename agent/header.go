package agent

import (
	"bytes"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// Header is the cache-relevant head of a model request: config, system
// prompt and tool schemas (session-log contract § 5).
type Header struct {
	Config llm.Config       `json:"config"`
	System string           `json:"system,omitempty"`
	Tools  []llm.ToolSchema `json:"tools,omitempty"`
}

type headerEvent struct {
	Header Header `json:"header"`
	Reason string `json:"reason"`
}

type systemDelta struct {
	KeepStart int      `json:"keepStart"`
	KeepEnd   int      `json:"keepEnd"`
	Insert    []string `json:"insert"`
}

type toolsDelta struct {
	Added   []llm.ToolSchema `json:"added"`
	Removed []string         `json:"removed"`
	Changed []llm.ToolSchema `json:"changed"`
}

type headerDelta struct {
	System *systemDelta `json:"system,omitempty"`
	Tools  *toolsDelta  `json:"tools,omitempty"`
	Config *llm.Config  `json:"config,omitempty"`
}

// foldHeader returns the header the log's header events describe, and
// whether there is one (the full fold; a session keeps it current in its
// derived state).
func foldHeader(events []session.Event) (Header, bool) {
	var h Header
	found := false
	for _, e := range events {
		switch e.Type {
		case session.TypeRequestHeader:
			var he headerEvent
			if e.Decode(&he) == nil {
				h, found = he.Header, true
			}
		case session.TypeRequestHeaderDelta:
			var d headerDelta
			if e.Decode(&d) == nil && found {
				h = applyDelta(h, d)
			}
		}
	}
	return h, found
}

func sameHeader(a, b Header) bool {
	return bytes.Equal(jsonx.MustMarshal(a), jsonx.MustMarshal(b))
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// diffHeader computes the delta from old to new.
func diffHeader(old, cur Header) headerDelta {
	var d headerDelta
	if old.System != cur.System {
		o, n := splitLines(old.System), splitLines(cur.System)
		start := 0
		for start < len(o) && start < len(n) && o[start] == n[start] {
			start++
		}
		end := 0
		for end < len(o)-start && end < len(n)-start && o[len(o)-1-end] == n[len(n)-1-end] {
			end++
		}
		insert := append([]string{}, n[start:len(n)-end]...)
		d.System = &systemDelta{KeepStart: start, KeepEnd: end, Insert: insert}
	}
	if !bytes.Equal(jsonx.MustMarshal(old.Tools), jsonx.MustMarshal(cur.Tools)) {
		td := &toolsDelta{Added: []llm.ToolSchema{}, Removed: []string{}, Changed: []llm.ToolSchema{}}
		oldBy := map[string]llm.ToolSchema{}
		for _, t := range old.Tools {
			oldBy[t.Name] = t
		}
		newBy := map[string]bool{}
		for _, t := range cur.Tools {
			newBy[t.Name] = true
			if ot, ok := oldBy[t.Name]; !ok {
				td.Added = append(td.Added, t)
			} else if !bytes.Equal(jsonx.MustMarshal(ot), jsonx.MustMarshal(t)) {
				td.Changed = append(td.Changed, t)
			}
		}
		for _, t := range old.Tools {
			if !newBy[t.Name] {
				td.Removed = append(td.Removed, t.Name)
			}
		}
		d.Tools = td
	}
	if !bytes.Equal(jsonx.MustMarshal(old.Config), jsonx.MustMarshal(cur.Config)) {
		c := cur.Config
		d.Config = &c
	}
	return d
}

// applyDelta applies d to h.
func applyDelta(h Header, d headerDelta) Header {
	out := h
	if d.System != nil {
		o := splitLines(h.System)
		var lines []string
		if d.System.KeepStart <= len(o) && d.System.KeepEnd <= len(o)-d.System.KeepStart {
			lines = append(lines, o[:d.System.KeepStart]...)
			lines = append(lines, d.System.Insert...)
			lines = append(lines, o[len(o)-d.System.KeepEnd:]...)
		}
		out.System = strings.Join(lines, "\n")
	}
	if d.Tools != nil {
		removed := map[string]bool{}
		for _, n := range d.Tools.Removed {
			removed[n] = true
		}
		changed := map[string]llm.ToolSchema{}
		for _, t := range d.Tools.Changed {
			changed[t.Name] = t
		}
		var tools []llm.ToolSchema
		for _, t := range h.Tools {
			if removed[t.Name] {
				continue
			}
			if c, ok := changed[t.Name]; ok {
				t = c
			}
			tools = append(tools, t)
		}
		tools = append(tools, d.Tools.Added...)
		out.Tools = tools
	}
	if d.Config != nil {
		out.Config = *d.Config
	}
	return out
}

// headerEventFor decides which header event (if any) a request owes:
// the first request of a loop instance always snapshots ("initial" or
// "resume"); later ones log nothing when unchanged, else a delta that
// round-trips, else a "fallback" snapshot.
// prev and found are the log's folded header (foldHeader).
func headerEventFor(prev Header, found bool, cur Header, first bool) (typ string, data any) {
	if first || !found {
		reason := "initial"
		if found {
			reason = "resume"
		}
		return session.TypeRequestHeader, headerEvent{Header: cur, Reason: reason}
	}
	if sameHeader(prev, cur) {
		return "", nil
	}
	d := diffHeader(prev, cur)
	if sameHeader(applyDelta(prev, d), cur) {
		return session.TypeRequestHeaderDelta, d
	}
	return session.TypeRequestHeader, headerEvent{Header: cur, Reason: "fallback"}
}
