package acp

import (
	"context"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// Agent is the surface the bridge drives; package agent implements it.
type Agent interface {
	// NewSession starts a session rooted at the absolute o.Cwd, with o's
	// extra roots and host.
	NewSession(ctx context.Context, o agent.SessionOptions) (Session, error)
	// LookupSession returns a stored session's header without a full parse.
	LookupSession(ctx context.Context, id string) (session.Header, error)
	// ResumeSession loads a stored session (crash repair applied) with o's
	// host and extra roots (o.Cwd is the stored one).
	ResumeSession(ctx context.Context, id string, o agent.SessionOptions) (Session, error)
	// ListSessions returns the headers of the stored sessions.
	ListSessions(ctx context.Context) ([]session.Header, error)
	// SessionTitle names a stored session ("" when unknown).
	SessionTitle(ctx context.Context, id string) string
}

// A live session is used through the small interfaces below, each owned by
// the bridge code that needs it; Session is their sum, what an Agent hands
// out. *agent.Session implements it (no adapter: Agent's two constructors
// only convert the result, as Go has no covariant return types).

// Conversation is what the presenter and the bridge's bookkeeping read of
// a session (sessions.go, the MCP connector): its id, its log and its
// tools (for their cards).
type Conversation interface {
	// ID returns the session id.
	ID() string
	// Log returns the session's event log.
	Log() *session.Log
	// Tools returns the session's tools.
	Tools() *capabilities.Registry
}

// Prompter runs a session's turns (prompt.go).
type Prompter interface {
	// Prompt runs one turn for the user's text and returns how it ended. It
	// returns once the turn's turn/end is in the log.
	Prompt(ctx context.Context, text string) session.EndReason
	// Cancel aborts the running turn (and drops one about to start).
	Cancel(reason string)
	// Ready tells a new session that the client knows it (its session/new
	// answer is out): it readies, in the background, what its first
	// prompt would otherwise wait for.
	Ready()
}

// Disposer ends a session (session/close, the connection's end).
type Disposer interface {
	// Interrupt marks the session disposed without waiting: a running turn
	// is aborted and ends "disposed".
	Interrupt()
	// Close disposes the session: a running turn ends "disposed" and the log
	// is flushed.
	Close(ctx context.Context) error
}

// Knobs are a session's config knobs (config.go).
type Knobs interface {
	// Knob returns a config knob's current value and whether it exists.
	Knob(id string) (string, bool)
	// SetKnob switches a knob: an id the session does not have is an
	// *agent.UnknownKnobError, a value its knob does not allow an
	// *agent.KnobValueError.
	SetKnob(id, value string) error
	// Knobs are the knobs the session's runtime registers, in anchoring
	// order (fixed for the session's life; it takes no lock, so it may be
	// called from inside the log's append).
	Knobs() []agent.Knob
}

// ModeSwitcher is a session's mode (modes.go, and the mode option).
type ModeSwitcher interface {
	// Modes lists the session's modes, default first (false: modes are
	// not composed).
	Modes() ([]string, bool)
	// Mode is the session's current mode (a held switch included).
	Mode() string
	// SetMode holds a mode switch until the next flush point.
	SetMode(id string) error
}

// Commander lists the slash commands a session handles itself (the
// available_commands_update).
type Commander interface {
	Commands() []agent.Command
}

// Session is one live conversation: everything the bridge serves.
type Session interface {
	Conversation
	Prompter
	Disposer
	Knobs
	ModeSwitcher
	Commander
}

// Options configures the bridge for a composition.
type Options struct {
	// AgentName and AgentVersion identify the agent in initialize.
	AgentName, AgentVersion string
	// AgentTitle, when set, is agentInfo.title: the name editors show.
	AgentTitle string
	// EditorConfig makes the config options read like an editor's menus:
	// the session mode is an option too (category "mode", kept in step
	// with the legacy modes object), the sandbox and approval options get
	// custom categories, every option and value has a human name and a
	// description, and config_option_update announces every value change
	// the client did not make itself (a plan approval, a widened sandbox).
	// Upstream offers sandbox (category "mode") and approvals with raw
	// ids and never sends config_option_update (acp-bridge §§ 7, 9).
	EditorConfig bool
	// Models, with EditorConfig, lists the models the Model option offers
	// (a session's current model is offered even when missing). It must
	// not block past ctx. Nil: no Model or Thinking option.
	Models func(ctx context.Context) []ModelChoice
	// AcceptMCPServers accepts a non-empty mcpServers list instead of
	// rejecting it with upstream's text; it is connected through MCP when
	// set (else logged and unused).
	AcceptMCPServers bool
	// MCP connects sessions to the client's MCP servers and makes
	// initialize advertise mcpCapabilities (nil: none).
	MCP MCPConnector
	// RequireElicitation sends questions only to clients that advertise
	// elicitation (upstream sends them regardless).
	RequireElicitation bool
	// ListSessions answers session/list (upstream: method not found).
	ListSessions bool
	// Lifecycle answers and advertises session/resume, session/close and
	// session/delete (upstream: method not found).
	Lifecycle bool
	// OfferAllowAlways adds an "Always allow in this session" option to
	// permission requests (upstream offers allow-once and reject only).
	OfferAllowAlways bool
	// PromptContext turns the context an editor attaches to a prompt into
	// text for the model: an embedded resource's text, and a
	// resource_link to a local file the file's content (bounded, the path
	// named); embeddedContext is advertised. An image or audio block gets
	// a message saying the model does not take it. Upstream rejects
	// everything but text and resource_link, and passes a link on as
	// "[resource_link name=… uri=…]" (acp-bridge § 5).
	PromptContext bool
	// EnvAuth advertises the API key: an env_var auth method, a terminal
	// sign-in to clients that run one, logout when a stored key can be
	// forgotten; authenticate, session/prompt, and session/new for a
	// client that advertised auth capabilities, answer auth_required
	// while no key is there, saying how to provide one. Nil: authMethods
	// is [] and authenticate a no-op, as upstream.
	EnvAuth *EnvAuth
	// PromptCommands lists a project's prompt commands (cwd: the
	// session's): slash commands whose text, expanded, is sent to the
	// model as the user's prompt. They are advertised after the session's
	// own commands, which win a name clash. Nil: none.
	PromptCommands func(cwd string) []PromptCommand
	// Images, with PromptContext, advertises image prompts (the default
	// model accepts them) and passes image blocks to the model while the
	// session's model accepts them (its ModelChoice says so).
	Images bool
	// Grants, with DetailedPermissions, remembers "always allow in this
	// project" answers (nil: not offered).
	Grants ProjectGrants
	// EditorCards renders tool cards for editors: every path the editor
	// sees (locations, diff paths) absolute, resolved against the session
	// cwd when the model gave a relative one (ACP requires absolute
	// paths). Upstream shows the model's path as given (acp-bridge § 12).
	EditorCards bool
	// DetailedPermissions makes a permission request one the user can
	// judge: its toolCall repeats the card (title, kind, rawInput,
	// locations, content: the command, the diff) with status "pending",
	// adds what is asked and why (the requested sandbox and the model's
	// justification), gives a request without a card (project hooks) a
	// title and content of its own, and names what "always" covers. The
	// card returns to in_progress once allowed. Upstream sends the tool
	// call id alone (acp-bridge § 13).
	DetailedPermissions bool
	// ChildApprovals puts a child agent's permission request (a sandbox
	// escalation, a write under read-only, inside a subagent, a fork or a
	// workflow child) to the user of the session the child works for,
	// on that session, with the concrete action shown. Upstream lets it
	// fall through to "unavailable" (subagents-workflows § 1).
	ChildApprovals bool
	// ContextWindow, when positive, turns on the context meter: a
	// usage_update after every model call (upstream sends none).
	ContextWindow int
	// CancelAfterTeardown answers a cancelled prompt once its turn has
	// ended, so every update of the turn (tool cards failing during the
	// teardown too) is written before the response, as ACP requires.
	// Upstream answers at once (acp-bridge contract § 6).
	CancelAfterTeardown bool
	// EditorFiles reaches file contents through the client's
	// fs/read_text_file and fs/write_text_file when it advertises them
	// (unsaved buffers are read, writes land in the editor's review); the
	// agent still confines every path itself. Upstream's file tools use
	// the local disk whatever the client advertises.
	EditorFiles bool
	// ExtraRoots accepts additionalDirectories in session/new, session/load
	// and session/resume (absolute, existing directories, advertised in
	// sessionCapabilities): each is a workspace root beyond the cwd, kept
	// with the session. Upstream rejects them (acp-bridge § 3).
	ExtraRoots bool
	// CheckCwd refuses, in session/new and session/load, a cwd that is not
	// an existing directory (upstream accepts any absolute path, and every
	// later tool call then fails).
	CheckCwd bool
	// ClearErrors answers failures in the editor's words: a failed turn
	// says what failed and what to do, and session/load of an unknown id is
	// resource_not_found (-32002) naming it. Upstream answers "Internal
	// error: turn failed: <message>" and -32603 (acp-bridge §§ 4–5).
	ClearErrors bool

	// CardUnloggedCalls makes a session/load replay show a tool call that
	// crash repair closed before its tool/call was logged (the model
	// announced it, the process died before running it) as a card of its
	// own: the call, then its interrupted result. So no update refers to a
	// card the editor never saw, and the editor's history shows what the
	// model's history holds. Upstream replays that update alone (acp-bridge
	// § 12, result fallback).
	CardUnloggedCalls bool
	// MergeReplayChunks makes a session/load replay send each streamed
	// message's text as one agent_message_chunk (and its reasoning as one
	// agent_thought_chunk) instead of one update per recorded chunk: the
	// editor shows the same text, from a fraction of the updates.
	// Upstream replays every chunk as its own update (acp-bridge § 12).
	MergeReplayChunks bool
	// ClientTerminals runs bash commands in the client's terminals
	// (terminal/*) when it advertises the terminal capability, confined
	// as locally; LiveOutput shows a running call's output in its card
	// while it runs (ephemeral tool_call_update in_progress). Upstream
	// runs every command locally and shows its output at its end.
	ClientTerminals, LiveOutput bool

	// MaxLineBytes bounds one inbound message (0: DefaultMaxLineBytes,
	// 16 MiB). A longer line is discarded as it is read and answered -32600.
	MaxLineBytes int
	// MaxPromptBytes bounds the text of one session/prompt across its
	// blocks (0: DefaultMaxPromptBytes, 4 MiB); a larger prompt is -32602.
	MaxPromptBytes int
}

// PromptCommand is a slash command that expands to a prompt for the model
// (/init, the user's .claude/commands and Codex prompts).
type PromptCommand struct {
	// Name is the command without the slash; Description is shown in the
	// editor's menu; Hint describes the arguments ("" when none).
	Name, Description, Hint string
	// Template is the prompt; $ARGUMENTS is replaced by the arguments
	// (appended when the template does not mention them).
	Template string
}

// Expand returns the prompt for args.
func (c PromptCommand) Expand(args string) string {
	if strings.Contains(c.Template, "$ARGUMENTS") {
		return strings.ReplaceAll(c.Template, "$ARGUMENTS", args)
	}
	if args == "" {
		return c.Template
	}
	return c.Template + "\n\nArguments: " + args
}

// ProjectGrants remembers what the user always allows in a project.
type ProjectGrants interface {
	// Granted reports whether scope was always allowed in project.
	Granted(project, scope string) bool
	// Grant remembers scope for project.
	Grant(project, scope string) error
}

// ModelChoice is one model the Model option offers.
type ModelChoice struct {
	// ID is the model id requests name; Name and Description are shown.
	ID, Name, Description string
	// Thinking says the model takes the thinking switch (the Thinking
	// option is shown while it is the session's model).
	Thinking bool
	// Images says the model accepts images in prompts.
	Images bool
}

// FromRuntime serves an agent runtime. Its session listing, lookup,
// titles, summaries and deletion are the runtime's own methods; only the
// two constructors convert their *agent.Session to Session.
func FromRuntime(rt *agent.Runtime) Agent { return runtimeAgent{rt} }

type runtimeAgent struct{ *agent.Runtime }

// NewSession implements Agent.
func (a runtimeAgent) NewSession(ctx context.Context, o agent.SessionOptions) (Session, error) {
	s, err := a.Runtime.NewSession(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ResumeSession implements Agent.
func (a runtimeAgent) ResumeSession(ctx context.Context, id string, o agent.SessionOptions) (Session, error) {
	s, err := a.Runtime.ResumeSession(ctx, id, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// The runtime's optional surfaces, checked at compile time.
var (
	_ sessionDeleter    = runtimeAgent{}
	_ sessionSummarizer = runtimeAgent{}
	_ sessionPager      = runtimeAgent{}
	_ Session           = (*agent.Session)(nil)
)
