package acp

import (
	"strings"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
)

// StatusUpdate is a tool_call_update that only changes a card's status.
type StatusUpdate struct {
	SessionUpdate UpdateKind     `json:"sessionUpdate"`
	ToolCallID    string         `json:"toolCallId"`
	Status        ToolCallStatus `json:"status"`
}

// keepCard remembers a running call's card for its permission requests.
func (s *Server) keepCard(ls *binding, card ToolCallCard) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ls.cards == nil {
		ls.cards = map[string]ToolCallCard{}
	}
	ls.cards[card.ToolCallID] = card
}

// dropCard forgets a finished call's card.
func (s *Server) dropCard(ls *binding, callID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(ls.cards, callID)
}

// hasCard reports whether the call has a card on the client.
func (s *Server) hasCard(ls *binding, callID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := ls.cards[callID]
	return ok
}

// permissionCall is the toolCall of a detailed permission request: the
// call's card (pending while the user decides) followed by what is asked;
// a request without a card (a call made from run_code, or by a child
// agent) gets a title and content of its own. Either way the concrete
// action (req.Action: the command a sandbox escalation would run) is
// shown whole, whatever the card's title shows of it.
func (s *Server) permissionCall(ls *binding, req approval.Request) ToolCallRef {
	s.mu.Lock()
	card, ok := ls.cards[req.CallID]
	s.mu.Unlock()
	ask := textItem(askText(req))
	if !ok {
		ref := ToolCallRef{ToolCallID: req.CallID, Title: askTitle(req), Kind: askKind(req), Status: StatusPending,
			Content: []ToolCallContent{ask}}
		if req.Action != "" && req.Scope != approval.ScopeWrites && req.Scope != approval.ScopeFolder {
			ref.Content = []ToolCallContent{textItem(actionBlock(req)), ask}
		}
		return ref
	}
	var content []ToolCallContent
	switch {
	case req.Action != "" && req.Scope == approval.ScopeSandbox:
		content = append(content, textItem(actionBlock(req)))
	case card.Kind == capabilities.ToolKindExecute:
		// The whole command, whatever the title shows of it.
		content = append(content, textItem("```sh\n"+card.Title+"\n```"))
	}
	// A terminal widget has no output before the command runs.
	content = append(append(content, withoutTerminals(card.Content)...), ask)
	return ToolCallRef{ToolCallID: req.CallID, Title: card.Title, Kind: card.Kind, Status: StatusPending,
		RawInput: card.RawInput, Locations: card.Locations, Content: content}
}

// actionBlock shows a request's concrete action as a code block: a shell
// block for a command.
func actionBlock(req approval.Request) string {
	if req.Scope == approval.ScopeSandbox {
		return "```sh\n" + req.Action + "\n```"
	}
	return "```\n" + req.Action + "\n```"
}

// withoutTerminals drops terminal widgets from card content.
func withoutTerminals(cs []ToolCallContent) []ToolCallContent {
	var out []ToolCallContent
	for _, c := range cs {
		if c.Type != "terminal" {
			out = append(out, c)
		}
	}
	return out
}

// escalation parses a bash sandbox escalation reason ("escalate sandbox
// to <mode>: <justification>").
func escalation(req approval.Request) (mode, why string, ok bool) {
	if req.Scope != approval.ScopeSandbox {
		return "", "", false
	}
	return req.Subject, req.Detail, true
}

// HooksConsent is the ToolName of the approval request that asks whether a
// project's hooks may run (it has no tool card; the request gets a title,
// kind and text of its own).
const HooksConsent = "hooks"

// sandboxName is a sandbox mode's menu name.
func sandboxName(mode string) string {
	for _, c := range sandboxChoices {
		if c.value == mode {
			return c.name
		}
	}
	return mode
}

// askText says what is asked and why, for the user.
func askText(req approval.Request) string {
	if mode, why, ok := escalation(req); ok {
		text := "The agent asks to run this command with the **" + sandboxName(mode) + "** sandbox (" + sandboxDescription(mode) + ")"
		if why != "" {
			text += "\n\nWhy: " + why
		}
		return text
	}
	if req.Scope == approval.ScopeNetwork {
		// The command itself, however the call arrived (a card, run_code).
		text := "The agent asks to run this command **with network access** (sandboxed commands cannot connect anywhere " +
			"while the Network option is off):\n\n```sh\n" + req.Subject + "\n```"
		if req.Detail != "" {
			text += "\n\nWhy: " + req.Detail
		}
		return text
	}
	if req.ToolName == HooksConsent {
		return "This project defines hooks: shell commands that run on your machine at points of the conversation. " +
			"They run only if you allow them.\n\n" + strings.TrimPrefix(req.Reason, "run this project's hooks:\n")
	}
	if req.Reason == "" {
		return "The agent asks to run " + req.ToolName + "."
	}
	return "The agent asks to " + req.Reason
}

func sandboxDescription(mode string) string {
	for _, c := range sandboxChoices {
		if c.value == mode {
			return strings.TrimSuffix(strings.ToLower(c.description[:1])+c.description[1:], ".")
		}
	}
	return mode
}

// askTitle titles a request that has no card: a command by itself (as
// its card would be), else what is asked.
func askTitle(req approval.Request) string {
	switch {
	case req.ToolName == HooksConsent:
		return "Run this project's hooks?"
	case req.Scope == approval.ScopeSandbox && req.Action != "":
		return req.Action
	case req.Action != "" && (req.Scope == approval.ScopeWrites || req.Scope == approval.ScopeFolder):
		return req.Action + "?" // "write /w/notes.txt?"
	case req.Scope == approval.ScopeNetwork:
		return "Run `" + clipRunes(req.Subject, 60) + "` with network access?"
	}
	return "Allow " + req.ToolName + "?"
}

// askKind is the tool kind of a request that has no card.
func askKind(req approval.Request) capabilities.ToolKind {
	if req.ToolName == HooksConsent || req.Scope == approval.ScopeSandbox || req.Scope == approval.ScopeNetwork {
		return capabilities.ToolKindExecute
	}
	return capabilities.ToolKindOther
}

// alwaysName names what "always" covers for a request.
func alwaysName(req approval.Request) string {
	if mode, _, ok := escalation(req); ok {
		return "Always allow, and keep this session at " + sandboxName(mode)
	}
	switch {
	case req.ToolName == HooksConsent:
		return "Always allow this project's hooks (until they change)"
	case req.Scope == approval.ScopeHost && req.Subject != "":
		return "Always allow " + req.Subject + " in this session"
	case req.Scope == approval.ScopeFolder:
		return "Always allow changes in this folder in this session"
	case req.Scope == approval.ScopeWrites:
		return "Always allow writes in this session (switches the sandbox to Workspace)"
	}
	return "Always allow in this session"
}

// projectScope is what "always allow in this project" would cover for a
// request, and the option's name ("" when the request has no such
// scope): one command (its canonical text, req.Action, never a title) at
// one sandbox level, or file writes. An escalation that does not name its
// command offers no such option.
func projectScope(req approval.Request) (scope, name string) {
	if mode, _, ok := escalation(req); ok && req.Action != "" {
		return "run:" + mode + ":" + req.Action, "Always allow `" + clipRunes(req.Action, 60) + "` with " + sandboxName(mode) + " in this project"
	}
	if req.Scope == approval.ScopeWrites {
		return "write", "Always allow writes in this project"
	}
	return "", ""
}

// clipRunes shortens s to n runes with an ellipsis.
func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
