// Package capabilities holds the model-facing tool machinery: the Tool
// interface, parameter schemas and their validation, the Registry that runs
// every call through one pipeline, and the card views (render intents) the
// ACP presenter turns into tool_call updates. Tool families live in
// subpackages, one each.
package capabilities

import (
	"context"
	"encoding/json"

	"github.com/dsh-acp/dsh-acp/session"
)

// Tool is one model-facing tool.
type Tool interface {
	// Name is the wire name.
	Name() string
	// Description is what the model reads about the tool.
	Description() string
	// Schema is the parameter schema (an object schema).
	Schema() *Schema
	// Traits say what a call does (see Traits); a tool declares them
	// here, in its definition, and nowhere else.
	Traits() Traits
	// Run executes a validated call. A returned error becomes an
	// "Error: <message>" result; a *CodedError also sets the result's error.
	Run(ctx context.Context, call *Call) (Result, error)
}

// Traits are what a tool's calls do, declared once by the tool (its
// Traits method) and read by everything that treats tools differently:
// plan mode offers the tools that change nothing and the planning tools,
// the loop runs consecutive read-only calls at once, and the tool-mode
// knob finds the program tool. The zero value claims nothing, which is
// the safe reading of a tool nobody described (an MCP server's): it may
// do anything, so it is never offered in plan mode or run concurrently.
type Traits struct {
	// ReadOnly: a call only reads (files, the web, the session) and
	// changes nothing, and it is no question to the user (an approval a
	// read may need is not one). Plan mode offers the tool, and
	// consecutive calls of one step may run at once.
	ReadOnly bool
	// Sequential: calls run one at a time though the tool only reads:
	// the service behind it limits its rate (a search provider), or a
	// call is too quick for running at once to gain anything.
	Sequential bool
	// Writes: a call may change files in the workspace.
	Writes bool
	// Runs: a call may run commands.
	Runs bool
	// Network: a call may reach the network.
	Network bool
	// Delegates: a call hands work to child agents (a subagent, a
	// workflow's), which do what their own tools' traits say; it may take
	// as long as a time budget allows (Timeouts.Max).
	Delegates bool
	// Asks: a call waits for the user's answer, so it has no time budget.
	Asks bool
	// Plans: the tool is part of planning, offered in plan mode though it
	// is not read-only (todo_write keeps the session's task list).
	Plans bool
	// Mode, when set, is the one session mode that offers the tool
	// (exit_plan_mode: plan), when that mode is composed.
	Mode string
	// Program: a call runs a model-written program over the session's
	// other tools (run_code), each call of which is gated as a direct one;
	// the tool-mode knob offers it alone, beside the others, or not at
	// all.
	Program bool
}

// Call is one tool invocation as a tool sees it.
type Call struct {
	// CallID is the model's id for the call.
	CallID string
	// Name is the tool name.
	Name string
	// Args is the parsed arguments object.
	Args json.RawMessage
	// Session is the calling session's environment.
	Session Env
}

// Env is what a tool may use of its calling session.
type Env interface {
	// Cwd is the session's working directory.
	Cwd() string
	// Log is the calling session's log (tools append effect events).
	Log() *session.Log
	// Host is what the session's host supplies: files, terminals, extra
	// roots (nil: everything local).
	Host() *Host
}

// Result is a tool's output.
type Result struct {
	Content []session.Block
	Meta    json.RawMessage
}

// TextResult is a result with one text block.
func TextResult(s string) Result { return Result{Content: []session.Block{session.TextBlock(s)}} }

// CodedError is a harness error class with a machine-readable code; it is
// recorded on the tool result as error {name, code}.
type CodedError struct {
	Name    string
	Code    string
	Message string
}

func (e *CodedError) Error() string { return e.Message }

// CallPresenter is implemented by tools with a custom call card.
type CallPresenter interface {
	PresentCall(args json.RawMessage) CallView
}

// ResultPresenter is implemented by tools with a custom result card.
type ResultPresenter interface {
	PresentResult(args json.RawMessage, r session.ToolResult) ResultView
}

// View kinds.
const (
	ViewGeneric  = "generic"
	ViewDiff     = "diff"
	ViewTerminal = "terminal"
)

// Location is a file a call touches.
type Location struct {
	Path string
	Line *int
}

// Diff is one file change shown in a diff card.
type Diff struct {
	Path    string
	OldText *string
	NewText string
}

// ToolKind is the ACP tool kind of a call's card: how editors group it
// and which icon they show.
type ToolKind string

// The ACP tool kinds.
const (
	ToolKindRead       ToolKind = "read"
	ToolKindEdit       ToolKind = "edit"
	ToolKindDelete     ToolKind = "delete"
	ToolKindMove       ToolKind = "move"
	ToolKindSearch     ToolKind = "search"
	ToolKindExecute    ToolKind = "execute"
	ToolKindThink      ToolKind = "think"
	ToolKindFetch      ToolKind = "fetch"
	ToolKindSwitchMode ToolKind = "switch_mode"
	ToolKindOther      ToolKind = "other"
)

// CallView is a tool call's card intent.
type CallView struct {
	Kind      string // ViewGeneric, ViewDiff, ViewTerminal
	Title     string
	ToolKind  ToolKind // the card's ACP tool kind ("" reads as ToolKindOther)
	RawInput  json.RawMessage
	Locations []Location
	Content   []string // generic text content
	Diffs     []Diff
	// Terminal views.
	Command     string
	Description string
	Cwd         string
	// EditorTitle and EditorKind, when set, replace Title and ToolKind in
	// editors (a question as the title; switch_mode for a plan review).
	EditorTitle string
	EditorKind  ToolKind
	// Hidden shows editors no card for the call (todo_write: its plan
	// update is the card).
	Hidden bool
}

// ResultView is a tool result's card intent.
type ResultView struct {
	Kind    string
	Title   string
	Content []session.Block // generic; nil means the raw result content
	Diffs   []Diff
	// Terminal views.
	Output   *string
	ExitCode *int
	Signal   string
	// Display is the terminal text an editor user sees: the command's
	// output without the annotations written for the model (the [stderr]
	// header, status markers); nil means Output.
	Display *string
	// Failed shows the card as failed though the result is no error (a
	// command that exited non-zero).
	Failed bool
	// Notes are short lines an editor shows under the output (how the
	// command ended, what the sandbox denied).
	Notes []string
	// StableTitle keeps the call's title in editors (Title is not sent).
	StableTitle bool
	// EditorContent, when non-nil, replaces Content in editors (the file
	// as a code block instead of the model's numbered view).
	EditorContent []session.Block
}

// Section is one part of the system prompt. Sections render sorted by Order
// (stable for ties); empty ones are dropped; the rest are joined by a blank
// line. {{model}} and {{cwd}} are interpolated per session.
type Section struct {
	Name  string
	Order int
	Text  string
}

// Sectioner is implemented by tools that add a section to the system
// prompt.
type Sectioner interface {
	PromptSection() Section
}

// OffWirer is implemented by a registered tool that is not offered to the
// model (code mode: the native tools are reached only from run_code).
type OffWirer interface {
	OffWire() bool
}

// OffWire reports whether t is registered but not offered to the model.
func OffWire(t Tool) bool {
	w, ok := t.(OffWirer)
	return ok && w.OffWire()
}
