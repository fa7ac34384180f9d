package bash

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// Final marker lines a terminal result's status is parsed back from.
var (
	signalLine = regexp.MustCompile(`\n\[killed by signal: ([^\]\n]+)\]$`)
	exitLine   = regexp.MustCompile(`\n\[exit code: (-?\d+)\]$`)
)

// PresentCall implements capabilities.CallPresenter: a terminal card for a
// foreground call, a generic one for a background call.
func (t *Tool) PresentCall(raw json.RawMessage) capabilities.CallView {
	a, _ := parseArgs(raw)
	if a.background() {
		return capabilities.CallView{
			Kind:     capabilities.ViewGeneric,
			Title:    a.Command,
			ToolKind: capabilities.ToolKindExecute,
			RawInput: rawString(a.Command),
			Content:  []string{a.Description},
		}
	}
	cwd := ""
	if a.Workdir != nil {
		cwd = *a.Workdir
	}
	return capabilities.CallView{
		Kind:        capabilities.ViewTerminal,
		Title:       a.Command,
		ToolKind:    "execute",
		RawInput:    rawString(a.Command),
		Command:     a.Command,
		Description: a.Description,
		Cwd:         cwd,
	}
}

// PresentResult implements capabilities.ResultPresenter: a terminal card for
// a foreground success, a fenced console block otherwise, the raw content
// when the result is not exactly one text block.
func (t *Tool) PresentResult(raw json.RawMessage, r session.ToolResult) capabilities.ResultView {
	if len(r.Content) != 1 || r.Content[0].Type != session.BlockText {
		return capabilities.ResultView{Kind: capabilities.ViewGeneric}
	}
	text := r.Content[0].Text
	a, _ := parseArgs(raw)
	if a.background() || r.IsError {
		fenced := "```console\n" + strings.TrimRight(text, "\n") + "\n```"
		return capabilities.ResultView{Kind: capabilities.ViewGeneric, Content: []session.Block{session.TextBlock(fenced)}}
	}
	v := capabilities.ResultView{Kind: capabilities.ViewTerminal, Output: &text}
	display, notes := userOutput(text)
	v.Display, v.Notes = &display, notes
	if m := signalLine.FindStringSubmatch(text); m != nil {
		v.Signal = m[1]
		v.Failed = true
		return v
	}
	code := 0
	if m := exitLine.FindStringSubmatch(text); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			code = n
		}
	}
	v.ExitCode = &code
	v.Failed = code != 0
	return v
}

// userOutput splits a bash result text into what the command printed
// (stdout, then stderr, without the [stderr] header) and notes for the
// user in place of the markers written for the model.
func userOutput(text string) (string, []string) {
	var notes []string
	for {
		// A marker is a whole final line after the body.
		i := strings.LastIndexByte(text, '\n')
		if i < 0 {
			break
		}
		last := text[i+1:]
		if !strings.HasSuffix(last, "]") || !isMarker(last) {
			break
		}
		if n := markerNote(last); n != "" {
			notes = append([]string{n}, notes...)
		}
		text = text[:i]
	}
	switch {
	case text == "(no output)":
		text = ""
	case strings.HasPrefix(text, "[stderr]\n"):
		text = text[len("[stderr]\n"):]
	default:
		if i := strings.Index(text, "\n[stderr]\n"); i >= 0 {
			text = text[:i+1] + text[i+len("\n[stderr]\n"):]
		}
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text, notes
}

// isMarker reports whether a final line is one of the result's status
// markers.
func isMarker(line string) bool {
	for _, p := range []string{"[exit code: ", "[killed by signal: ", "[timed out after ", "[sandbox: "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// markerNote is a marker in the user's words ("" for the hint to the
// model).
func markerNote(line string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(line, "["), "]")
	switch {
	case line == EscalationMarker, line == NetEscalationMarker:
		return ""
	case strings.HasPrefix(line, "[exit code: "):
		return "Exited with code " + strings.TrimPrefix(inner, "exit code: ") + "."
	case strings.HasPrefix(line, "[killed by signal: "):
		return "Killed by signal " + strings.TrimPrefix(inner, "killed by signal: ") + "."
	case strings.HasPrefix(line, "[timed out after "):
		return "Stopped: timed out after " + strings.TrimPrefix(inner, "timed out after ") + "."
	case strings.HasPrefix(line, "[sandbox: network access denied under "):
		return "The sandbox kept the command off the network (the Network option is off)."
	case strings.HasPrefix(line, "[sandbox: file access denied under "):
		return "The sandbox denied file access (" + strings.TrimSuffix(strings.TrimPrefix(inner, "sandbox: file access denied under "), " mode") + ")."
	}
	return strings.TrimPrefix(inner, "sandbox: ")
}
