package acp

import (
	"context"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// Agent is the surface the bridge drives; package agent implements it.
// An Agent that also has a Close method (agentCloser) belongs to the
// server it was given to: Serve closes it as it returns, once every
// session is disposed.
type Agent interface {
	// NewSession starts a session rooted at the absolute o.Cwd, with o's
	// extra roots and host.
	NewSession(ctx context.Context, o agent.SessionOptions) (Served, error)
	// LookupSession returns a stored session's header without a full parse.
	LookupSession(ctx context.Context, id string) (session.Header, error)
	// ResumeSession loads a stored session (crash repair applied) with o's
	// host and extra roots (o.Cwd is the stored one).
	ResumeSession(ctx context.Context, id string, o agent.SessionOptions) (Served, error)
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

// Served is one live conversation: everything the bridge serves.
type Served interface {
	Conversation
	Prompter
	Disposer
	Knobs
	ModeSwitcher
	Commander
}

// Options configures the bridge for a composition: its feature set and
// the settings that are not on/off switches.
type Options struct {
	// Features are the behaviours beyond upstream's contract the bridge
	// has (UpstreamExact or DefaultFeatures).
	Features
	// AgentName and AgentVersion identify the agent in initialize.
	AgentName, AgentVersion string
	// AgentTitle, when set, is agentInfo.title: the name editors show.
	AgentTitle string
	// Models, with EditorConfig, lists the models the Model option offers
	// (a session's current model is offered even when missing). It must
	// not block past ctx. Nil: no Model or Thinking option.
	Models func(ctx context.Context) []ModelChoice
	// MCP connects sessions to the client's MCP servers and makes
	// initialize advertise mcpCapabilities (nil: none).
	MCP MCPConnector
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
	// ContextWindow, when positive, turns on the context meter: a
	// usage_update after every model call (upstream sends none).
	ContextWindow int

	// MaxLineBytes bounds one inbound message (0: DefaultMaxLineBytes,
	// 16 MiB). A longer line is discarded as it is read and answered -32600.
	MaxLineBytes int
	// MaxPromptBytes bounds the text of one session/prompt across its
	// blocks (0: DefaultMaxPromptBytes, 4 MiB); a larger prompt is -32602.
	MaxPromptBytes int

	// AfterInitialize, when set, runs once, after the first initialize
	// answer is written: start-up work of the process that the client
	// should not wait for (as the agent's own Warm, which runs first).
	AfterInitialize func()
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
func (a runtimeAgent) NewSession(ctx context.Context, o agent.SessionOptions) (Served, error) {
	s, err := a.Runtime.NewSession(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ResumeSession implements Agent.
func (a runtimeAgent) ResumeSession(ctx context.Context, id string, o agent.SessionOptions) (Served, error) {
	s, err := a.Runtime.ResumeSession(ctx, id, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// agentCloser is an Agent with background work of its own to stop.
type agentCloser interface {
	// Close stops the agent's background work and waits for it.
	Close()
}

// agentWarmer is an Agent with start-up work to do once the client has
// its initialize answer (agent.Runtime.Warm).
type agentWarmer interface {
	// Warm starts that work in the background, once.
	Warm()
}

// The runtime's optional surfaces, checked at compile time.
var (
	_ agentCloser       = runtimeAgent{}
	_ agentWarmer       = runtimeAgent{}
	_ sessionDeleter    = runtimeAgent{}
	_ sessionSummarizer = runtimeAgent{}
	_ sessionPager      = runtimeAgent{}
	_ Served            = (*agent.Session)(nil)
)
