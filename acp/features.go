package acp

import "reflect"

// Features are the bridge's behaviours beyond upstream's contract, each a
// switch: all off is upstream's wire exactly (UpstreamExact), all on is
// what editor users get (DefaultFeatures). A new editor-only behaviour is
// one field here, and DefaultFeatures turns it on.
type Features struct {
	// EditorConfig makes the config options read like an editor's menus:
	// the session mode is an option too (category "mode", kept in step
	// with the legacy modes object), the sandbox and approval options get
	// custom categories, every option and value has a human name and a
	// description, and config_option_update announces every value change
	// the client did not make itself (a plan approval, a widened sandbox).
	// Upstream offers sandbox (category "mode") and approvals with raw
	// ids and never sends config_option_update (acp-bridge §§ 7, 9).
	EditorConfig bool
	// AcceptMCPServers accepts a non-empty mcpServers list instead of
	// rejecting it with upstream's text; it is connected through MCP when
	// set (else logged and unused).
	AcceptMCPServers bool
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
}

// UpstreamExact is upstream's feature set: none, so the wire and the logs
// are upstream's byte for byte.
func UpstreamExact() Features { return Features{} }

// DefaultFeatures is the default composition's feature set: every feature.
func DefaultFeatures() Features {
	var f Features
	v := reflect.ValueOf(&f).Elem()
	for i := range v.NumField() {
		v.Field(i).SetBool(true)
	}
	return f
}
