package fs

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// Cards (tools contract §§ 4–6). Presenters see arguments that passed the
// schema, so field types are right; anything else still degrades to zero
// values rather than failing.

// PresentCall implements capabilities.CallPresenter: a generic read card
// titled "Read <file_path>" plus the window, located at the first line.
func (*readTool) PresentCall(args json.RawMessage) capabilities.CallView {
	var a readArgs
	_ = json.Unmarshal(args, &a)
	title := "Read " + a.FilePath
	offset, hasOffset := cardNumber(a.Offset)
	limit, hasLimit := cardNumber(a.Limit)
	start := 1.0
	if hasOffset {
		start = offset
	}
	switch {
	case hasLimit && limit > 0:
		title += " (" + jsFloat(start) + " - " + jsFloat(start+limit-1) + ")"
	case hasOffset:
		title += " (from line " + jsFloat(offset) + ")"
	}
	line := 1
	if hasOffset {
		line = int(math.Max(math.Min(offset, math.MaxInt32), math.MinInt32))
	}
	return capabilities.CallView{
		Kind:      capabilities.ViewGeneric,
		Title:     title,
		ToolKind:  capabilities.ToolKindRead,
		Locations: []capabilities.Location{{Path: a.FilePath, Line: &line}},
	}
}

// PresentResult implements capabilities.ResultPresenter: the model's view
// as is (upstream shows the raw result), and for editors the lines read as
// a fenced code block with the footer's note under it. Errors stay raw.
func (*readTool) PresentResult(args json.RawMessage, r session.ToolResult) capabilities.ResultView {
	v := rawView()
	if r.IsError || len(r.Content) != 1 || r.Content[0].Type != session.BlockText {
		return v
	}
	var a readArgs
	_ = json.Unmarshal(args, &a)
	code, note, ok := readLines(r.Content[0].Text)
	if !ok {
		return v
	}
	text := fence(code, fenceLang(a.FilePath))
	if note != "" && !strings.HasPrefix(note, "End of file") { // only a partial read needs a note
		text += "\n\n" + note
	}
	v.EditorContent = []session.Block{session.TextBlock(text)}
	return v
}

// readLines recovers the lines of a read result: the numbered body
// without its "N: " prefixes, and the footer.
func readLines(text string) (code, note string, ok bool) {
	_, rest, ok := strings.Cut(text, "\n<content>\n")
	if !ok {
		return "", "", false
	}
	rest, ok = strings.CutSuffix(rest, "\n</content>")
	if !ok {
		return "", "", false
	}
	body, footer := "", rest
	if i := strings.LastIndex(rest, "\n\n"); i >= 0 {
		body, footer = rest[:i], rest[i+2:]
	}
	var b strings.Builder
	for i, line := range strings.Split(body, "\n") {
		if body == "" {
			break
		}
		_, l, found := strings.Cut(line, ": ")
		if !found {
			return "", "", false
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	return b.String(), strings.Trim(footer, "()"), true
}

// fence wraps code in a Markdown fence longer than any backtick run in it.
func fence(code, lang string) string {
	ticks := "```"
	for strings.Contains(code, ticks) {
		ticks += "`"
	}
	return ticks + lang + "\n" + code + "\n" + ticks
}

// fenceLang is the Markdown language of a file, from its extension.
func fenceLang(path string) string {
	ext := strings.TrimPrefix(filepath.Ext(path), ".")
	switch ext {
	case "md":
		return "markdown"
	case "yml":
		return "yaml"
	case "sh", "bash":
		return "sh"
	case "py":
		return "python"
	case "js", "mjs", "cjs":
		return "javascript"
	case "ts":
		return "typescript"
	case "rs":
		return "rust"
	case "rb":
		return "ruby"
	}
	for _, c := range ext {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return ext
}

// cardNumber parses an optional JSON number argument.
func cardNumber(n json.Number) (float64, bool) {
	if n == "" {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil {
		return 0, false
	}
	return f, true
}

// PresentCall implements capabilities.CallPresenter: a diff card showing the
// whole content as new.
func (*writeTool) PresentCall(args json.RawMessage) capabilities.CallView {
	var a writeArgs
	_ = json.Unmarshal(args, &a)
	return capabilities.CallView{
		Kind:      capabilities.ViewDiff,
		Title:     "Write " + a.FilePath,
		ToolKind:  capabilities.ToolKindEdit,
		Diffs:     []capabilities.Diff{{Path: a.FilePath, NewText: a.Content}},
		Locations: []capabilities.Location{{Path: a.FilePath}},
	}
}

// PresentResult implements capabilities.ResultPresenter: the hunks of
// meta.diffs, or the whole content as new when there are none; the raw
// result on error.
func (*writeTool) PresentResult(args json.RawMessage, r session.ToolResult) capabilities.ResultView {
	if r.IsError {
		return rawView()
	}
	var a writeArgs
	_ = json.Unmarshal(args, &a)
	diffs, ok := parseMetaDiffs(r.Meta)
	if !ok || len(diffs) == 0 {
		diffs = []capabilities.Diff{{Path: a.FilePath, NewText: a.Content}}
	}
	return capabilities.ResultView{Kind: capabilities.ViewDiff, Title: "Write " + a.FilePath, Diffs: diffs}
}

// PresentCall implements capabilities.CallPresenter: a diff card of
// old_string → new_string.
func (*editTool) PresentCall(args json.RawMessage) capabilities.CallView {
	var a editArgs
	_ = json.Unmarshal(args, &a)
	d := capabilities.Diff{Path: a.FilePath, NewText: a.NewString}
	if a.OldString != "" {
		old := a.OldString
		d.OldText = &old
	}
	return capabilities.CallView{
		Kind:      capabilities.ViewDiff,
		Title:     "Edit " + a.FilePath,
		ToolKind:  capabilities.ToolKindEdit,
		Diffs:     []capabilities.Diff{d},
		Locations: []capabilities.Location{{Path: a.FilePath}},
	}
}

// PresentResult implements capabilities.ResultPresenter: the hunks of
// meta.diffs; the raw result on error or when they are missing, empty or
// malformed.
func (*editTool) PresentResult(args json.RawMessage, r session.ToolResult) capabilities.ResultView {
	if r.IsError {
		return rawView()
	}
	diffs, ok := parseMetaDiffs(r.Meta)
	if !ok || len(diffs) == 0 {
		return rawView()
	}
	var a editArgs
	_ = json.Unmarshal(args, &a)
	return capabilities.ResultView{Kind: capabilities.ViewDiff, Title: "Edit " + a.FilePath, Diffs: diffs}
}

// rawView is the generic result card showing the raw result content.
func rawView() capabilities.ResultView {
	return capabilities.ResultView{Kind: capabilities.ViewGeneric}
}

// parseMetaDiffs reads meta.diffs strictly: every entry must be an object
// with a string path, a string or null oldText and a string newText.
func parseMetaDiffs(meta json.RawMessage) ([]capabilities.Diff, bool) {
	if len(meta) == 0 {
		return nil, false
	}
	var m struct {
		Diffs []map[string]json.RawMessage `json:"diffs"`
	}
	if err := json.Unmarshal(meta, &m); err != nil || m.Diffs == nil {
		return nil, false
	}
	out := make([]capabilities.Diff, 0, len(m.Diffs))
	for _, e := range m.Diffs {
		var d capabilities.Diff
		if !jsonString(e["path"], &d.Path) || !jsonString(e["newText"], &d.NewText) {
			return nil, false
		}
		old, present := e["oldText"]
		if !present {
			return nil, false
		}
		if !bytes.Equal(bytes.TrimSpace(old), []byte("null")) {
			var s string
			if !jsonString(old, &s) {
				return nil, false
			}
			d.OldText = &s
		}
		out = append(out, d)
	}
	return out, true
}

// jsonString decodes raw into dst when it is a JSON string.
func jsonString(raw json.RawMessage, dst *string) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return false
	}
	return json.Unmarshal(raw, dst) == nil
}
