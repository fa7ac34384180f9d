package acp

import (
	"encoding/json"
	"path"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// ToolLookup finds a session's tools for their card presenters.
type ToolLookup interface {
	Lookup(name string) (capabilities.Tool, bool)
}

// ToolCallCard is the tool_call update (every card kind; unused keys are
// omitted, so the key order of each kind is preserved).
type ToolCallCard struct {
	SessionUpdate UpdateKind            `json:"sessionUpdate"`
	ToolCallID    string                `json:"toolCallId"`
	Title         string                `json:"title"`
	Kind          capabilities.ToolKind `json:"kind"`
	Status        ToolCallStatus        `json:"status"`
	RawInput      json.RawMessage       `json:"rawInput,omitempty"`
	Locations     []Location            `json:"locations,omitempty"`
	Content       []ToolCallContent     `json:"content,omitempty"`
	Meta          *terminalInfoMeta     `json:"_meta,omitempty"`
}

type terminalInfoMeta struct {
	TerminalInfo terminalInfo `json:"terminal_info"`
}

type terminalInfo struct {
	TerminalID string `json:"terminal_id"`
	Cwd        string `json:"cwd,omitempty"`
}

// ToolCallUpdateCard is the tool_call_update of generic and diff results.
type ToolCallUpdateCard struct {
	SessionUpdate UpdateKind        `json:"sessionUpdate"`
	ToolCallID    string            `json:"toolCallId"`
	Status        ToolCallStatus    `json:"status"`
	Content       []ToolCallContent `json:"content,omitempty"`
	Title         string            `json:"title,omitempty"`
	RawOutput     json.RawMessage   `json:"rawOutput,omitempty"`
}

// TerminalUpdateCard is the tool_call_update of a terminal result when the
// client renders terminal output itself (title precedes _meta).
type TerminalUpdateCard struct {
	SessionUpdate UpdateKind         `json:"sessionUpdate"`
	ToolCallID    string             `json:"toolCallId"`
	Status        ToolCallStatus     `json:"status"`
	Title         string             `json:"title,omitempty"`
	Content       []ToolCallContent  `json:"content,omitempty"`
	RawOutput     json.RawMessage    `json:"rawOutput,omitempty"`
	Meta          terminalOutputMeta `json:"_meta"`
}

type terminalOutputMeta struct {
	TerminalOutput terminalOutput `json:"terminal_output"`
	TerminalExit   *terminalExit  `json:"terminal_exit,omitempty"`
}

type terminalOutput struct {
	TerminalID string `json:"terminal_id"`
	Data       string `json:"data"`
}

type terminalExit struct {
	TerminalID string `json:"terminal_id"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	Signal     string `json:"signal,omitempty"`
}

// callCard renders a tool/call (acp-bridge § 12).
func (p *presenter) callCard(c session.ToolCall) (ToolCallCard, *capabilities.CallView) {
	args := capabilities.ParseArgs(c.Arguments)
	if t, ok := p.lookup(c.Name, args); ok {
		if cp, ok := t.(capabilities.CallPresenter); ok {
			v := cp.PresentCall(args)
			card := p.renderCall(c.CallID, v)
			if p.editor && len(args) > 0 && args[0] == '{' {
				card.RawInput = args // the call's arguments, as an object
			}
			return card, &v
		}
	}
	return ToolCallCard{SessionUpdate: UpdateToolCall, ToolCallID: c.CallID, Title: c.Name, Kind: capabilities.ToolKindOther, Status: StatusInProgress, RawInput: args}, nil
}

// lookup returns the tool when it exists and the arguments validate.
func (p *presenter) lookup(name string, args json.RawMessage) (capabilities.Tool, bool) {
	if p.tools == nil {
		return nil, false
	}
	t, ok := p.tools.Lookup(name)
	if !ok || len(t.Schema().Validate(args)) > 0 {
		return nil, false
	}
	return t, true
}

func (p *presenter) renderCall(id string, v capabilities.CallView) ToolCallCard {
	if p.editor {
		v.Locations, v.Diffs = p.absLocations(v.Locations), p.absDiffs(v.Diffs)
		if v.EditorTitle != "" {
			v.Title = v.EditorTitle
		}
		if v.EditorKind != "" {
			v.ToolKind = v.EditorKind
		}
	}
	card := ToolCallCard{SessionUpdate: UpdateToolCall, ToolCallID: id, Status: StatusInProgress}
	switch v.Kind {
	case capabilities.ViewTerminal:
		card.Title, card.Kind = v.Command, capabilities.ToolKindExecute
		card.RawInput = jsonx.MustMarshal(v.Command)
		if v.Description != "" {
			card.Content = append(card.Content, textItem(v.Description))
		}
		if p.terminal {
			card.Content = append(card.Content, ToolCallContent{Type: "terminal", TerminalID: id})
			card.Meta = &terminalInfoMeta{terminalInfo{TerminalID: id, Cwd: p.terminalCwd(v.Cwd)}}
		}
	case capabilities.ViewDiff:
		raw := ""
		if len(v.Locations) > 0 {
			raw = v.Locations[0].Path
		} else if len(v.Diffs) > 0 {
			raw = v.Diffs[0].Path
		}
		card.Title, card.Kind = p.displayTitle(v.Title, raw), capabilities.ToolKindEdit
		card.Locations = locations(v.Locations)
		card.Content = diffItems(v.Diffs)
	default:
		raw := ""
		if len(v.Locations) > 0 {
			raw = v.Locations[0].Path
		}
		card.Title = p.displayTitle(v.Title, raw)
		card.Kind = v.ToolKind
		if card.Kind == "" {
			card.Kind = capabilities.ToolKindOther
		}
		card.RawInput = v.RawInput
		card.Locations = locations(v.Locations)
		for _, t := range v.Content {
			card.Content = append(card.Content, textItem(t))
		}
	}
	return card
}

// resultCard renders a tool/result given the remembered call.
func (p *presenter) resultCard(r session.ToolResult, call *rememberedCall) any {
	live, _ := p.live.take(r.CallID)
	card := p.resultView(r, call, live)
	if !p.editor {
		return card
	}
	out := rawOutput(r)
	switch c := card.(type) {
	case ToolCallUpdateCard:
		c.RawOutput = out
		return c
	case TerminalUpdateCard:
		c.RawOutput = out
		return c
	}
	return card
}

// rawOutput is a result as the tool returned it: {"output", "isError"}.
func rawOutput(r session.ToolResult) json.RawMessage {
	var b strings.Builder
	for _, bl := range r.Content {
		if bl.Type == session.BlockText {
			b.WriteString(bl.Text)
		}
	}
	return jsonx.MustMarshal(struct {
		Output  string `json:"output"`
		IsError bool   `json:"isError,omitempty"`
	}{b.String(), r.IsError})
}

// resultView renders a tool/result given the remembered call and what the
// call showed live while it ran.
func (p *presenter) resultView(r session.ToolResult, call *rememberedCall, live liveCall) any {
	status := StatusCompleted
	if r.IsError {
		status = StatusFailed
	}
	raw := ToolCallUpdateCard{SessionUpdate: UpdateToolCallUpdate, ToolCallID: r.CallID, Status: status, Content: textContent(r.Content)}
	if call == nil {
		return raw
	}
	t, ok := p.lookup(call.name, call.args)
	if !ok {
		return raw
	}
	rp, ok := t.(capabilities.ResultPresenter)
	if !ok {
		return raw
	}
	v := rp.PresentResult(call.args, r)
	if p.editor {
		v.Diffs = p.absDiffs(v.Diffs)
	}
	switch v.Kind {
	case capabilities.ViewTerminal:
		if call.view == nil || call.view.Kind != capabilities.ViewTerminal {
			return raw
		}
		output := ""
		if v.Output != nil {
			output = *v.Output
		}
		var notes []ToolCallContent
		if p.editor {
			if v.Display != nil {
				output = *v.Display
			}
			if v.Failed {
				status = StatusFailed
			}
			for _, n := range v.Notes {
				notes = append(notes, textItem(n))
			}
		}
		if live.terminalID != "" {
			// The command ran in the client's terminal: the card keeps it
			// (the client shows a released terminal's output), then the
			// notes. A load, without the terminal, shows the output.
			var content []ToolCallContent
			if call.view.Description != "" {
				content = append(content, textItem(call.view.Description))
			}
			content = append(append(content, ToolCallContent{Type: "terminal", TerminalID: live.terminalID}), notes...)
			return ToolCallUpdateCard{SessionUpdate: UpdateToolCallUpdate, ToolCallID: r.CallID, Status: status, Content: content, Title: v.Title}
		}
		if p.terminal {
			if live.sent > 0 {
				output = "" // streamed as terminal_output while it ran
			}
			meta := terminalOutputMeta{TerminalOutput: terminalOutput{TerminalID: r.CallID, Data: output}}
			switch {
			case v.Signal != "":
				meta.TerminalExit = &terminalExit{TerminalID: r.CallID, Signal: v.Signal}
			case v.ExitCode != nil:
				meta.TerminalExit = &terminalExit{TerminalID: r.CallID, ExitCode: v.ExitCode}
			}
			var content []ToolCallContent
			if len(notes) > 0 {
				// The content is replaced whole: keep the description and
				// the terminal, then the notes.
				if call.view.Description != "" {
					content = append(content, textItem(call.view.Description))
				}
				content = append(append(content, ToolCallContent{Type: "terminal", TerminalID: r.CallID}), notes...)
			}
			return TerminalUpdateCard{SessionUpdate: UpdateToolCallUpdate, ToolCallID: r.CallID, Status: status, Title: v.Title, Content: content, Meta: meta}
		}
		return ToolCallUpdateCard{SessionUpdate: UpdateToolCallUpdate, ToolCallID: r.CallID, Status: status,
			Content: append([]ToolCallContent{textItem(consoleBlock(output))}, notes...), Title: v.Title}
	case capabilities.ViewDiff:
		rawPath := ""
		if len(v.Diffs) > 0 {
			rawPath = v.Diffs[0].Path
		}
		return ToolCallUpdateCard{SessionUpdate: UpdateToolCallUpdate, ToolCallID: r.CallID, Status: status,
			Content: diffItems(v.Diffs), Title: p.displayTitle(v.Title, rawPath)}
	default:
		content := raw.Content
		if v.Content != nil {
			content = textContent(v.Content)
		}
		if p.editor && v.EditorContent != nil {
			content = textContent(v.EditorContent)
		}
		if p.editor && v.StableTitle {
			v.Title = ""
		}
		return ToolCallUpdateCard{SessionUpdate: UpdateToolCallUpdate, ToolCallID: r.CallID, Status: status, Content: content, Title: v.Title}
	}
}

// terminalCwd is the cwd shown for a terminal card.
func (p *presenter) terminalCwd(viewCwd string) string {
	switch {
	case strings.HasPrefix(viewCwd, "/"):
		return viewCwd
	case viewCwd != "" && strings.HasPrefix(p.cwd, "/"):
		return path.Join(p.cwd, viewCwd)
	}
	return p.cwd
}

// abs resolves a path the model gave against the session cwd: editors
// need absolute paths to follow along and open diffs.
func (p *presenter) abs(pth string) string {
	if pth == "" || strings.HasPrefix(pth, "/") || !strings.HasPrefix(p.cwd, "/") {
		return pth
	}
	return path.Join(p.cwd, pth)
}

// absLocations is ls with absolute paths (a copy).
func (p *presenter) absLocations(ls []capabilities.Location) []capabilities.Location {
	if ls == nil {
		return nil
	}
	out := make([]capabilities.Location, len(ls))
	for i, l := range ls {
		l.Path = p.abs(l.Path)
		out[i] = l
	}
	return out
}

// absDiffs is ds with absolute paths (a copy).
func (p *presenter) absDiffs(ds []capabilities.Diff) []capabilities.Diff {
	if ds == nil {
		return nil
	}
	out := make([]capabilities.Diff, len(ds))
	for i, d := range ds {
		d.Path = p.abs(d.Path)
		out[i] = d
	}
	return out
}

// displayTitle relativizes rawPath inside title against the session cwd.
func (p *presenter) displayTitle(title, rawPath string) string {
	if !strings.HasPrefix(rawPath, "/") || !strings.HasPrefix(p.cwd, "/") {
		return title
	}
	rel := relative(path.Clean(p.cwd), path.Clean(rawPath))
	if rel == "" || rel == ".." || strings.HasPrefix(rel, "../") {
		return title
	}
	return strings.ReplaceAll(title, rawPath, rel)
}

// relative is Node's path.posix.relative for clean absolute paths.
func relative(from, to string) string {
	if from == to {
		return ""
	}
	fp, tp := splitPath(from), splitPath(to)
	i := 0
	for i < len(fp) && i < len(tp) && fp[i] == tp[i] {
		i++
	}
	var parts []string
	for range fp[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, tp[i:]...)
	return strings.Join(parts, "/")
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func textItem(s string) ToolCallContent {
	return ToolCallContent{Type: "content", Content: &TextContent{"text", s}}
}

func diffItems(diffs []capabilities.Diff) []ToolCallContent {
	var out []ToolCallContent
	for _, d := range diffs {
		nt := d.NewText
		out = append(out, ToolCallContent{Type: "diff", Path: d.Path, OldText: d.OldText, NewText: &nt})
	}
	return out
}

func locations(ls []capabilities.Location) []Location {
	var out []Location
	for _, l := range ls {
		out = append(out, Location{Path: l.Path, Line: l.Line})
	}
	return out
}

func textContent(blocks []session.Block) []ToolCallContent {
	var out []ToolCallContent
	for _, b := range blocks {
		if b.Type == session.BlockText {
			out = append(out, textItem(b.Text))
		}
	}
	return out
}

// progressCard is a running call's progress (tool/progress): the card's
// content for now, status in_progress; the result replaces it.
func (p *presenter) progressCard(pr session.ToolProgress) ToolCallUpdateCard {
	return ToolCallUpdateCard{SessionUpdate: UpdateToolCallUpdate, ToolCallID: pr.CallID, Status: StatusInProgress, Content: textContent(pr.Content)}
}
