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
			ToolKind: "execute",
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
	if m := signalLine.FindStringSubmatch(text); m != nil {
		v.Signal = m[1]
		return v
	}
	code := 0
	if m := exitLine.FindStringSubmatch(text); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			code = n
		}
	}
	v.ExitCode = &code
	return v
}
