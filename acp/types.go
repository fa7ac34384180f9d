// Package acp is the wire: Agent Client Protocol framing (a JSON-RPC
// library behind one seam, conn.go), hand-written message types whose field order is the
// emitted key order, one file per method family, the client proxy and the
// presenter that turns session events into session/update notifications.
package acp

import "encoding/json"

// ProtocolVersion is the ACP version this agent speaks.
const ProtocolVersion = 1

// ClientCapabilities is what the client advertises at initialize.
type ClientCapabilities struct {
	FS *struct {
		ReadTextFile  bool `json:"readTextFile"`
		WriteTextFile bool `json:"writeTextFile"`
	} `json:"fs,omitempty"`
	Terminal    bool `json:"terminal,omitempty"`
	Elicitation *struct {
		Form *struct{} `json:"form,omitempty"`
	} `json:"elicitation,omitempty"`
	// Auth is present when the client handles auth methods
	// (AuthCapabilities).
	Auth json.RawMessage `json:"auth,omitempty"`
	// Session holds session-related extensions (unstable schema:
	// ClientSessionCapabilities); Compaction present and not null means
	// the client takes compaction_update.
	Session *struct {
		Compaction json.RawMessage `json:"compaction,omitempty"`
	} `json:"session,omitempty"`
	// Subagents (unstable schema) present and not null means the client
	// shows child sessions (subagent_update).
	Subagents json.RawMessage            `json:"subagents,omitempty"`
	Meta      map[string]json.RawMessage `json:"_meta,omitempty"`
}

// InitializeRequest is the params of initialize.
type InitializeRequest struct {
	ProtocolVersion    json.RawMessage    `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
}

// Implementation names a program and its version.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// PromptCapabilities says which prompt content blocks the agent accepts.
type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

// AgentCapabilities is what the agent advertises.
type AgentCapabilities struct {
	LoadSession         bool                 `json:"loadSession"`
	PromptCapabilities  PromptCapabilities   `json:"promptCapabilities"`
	MCPCapabilities     *MCPCapabilities     `json:"mcpCapabilities,omitempty"`
	SessionCapabilities *SessionCapabilities `json:"sessionCapabilities,omitempty"`
	// Auth is present when the agent supports logout.
	Auth *AgentAuthCapabilities `json:"auth,omitempty"`
}

// AgentAuthCapabilities advertises optional auth methods.
type AgentAuthCapabilities struct {
	Logout *struct{} `json:"logout,omitempty"`
}

// SessionCapabilities advertises optional session methods.
type SessionCapabilities struct {
	List   *struct{} `json:"list,omitempty"`
	Delete *struct{} `json:"delete,omitempty"`
	// AdditionalDirectories: session/new, load and resume take
	// additionalDirectories.
	AdditionalDirectories *struct{} `json:"additionalDirectories,omitempty"`
	Resume                *struct{} `json:"resume,omitempty"`
	Close                 *struct{} `json:"close,omitempty"`
}

// InitializeResponse is the result of initialize.
type InitializeResponse struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentInfo         Implementation    `json:"agentInfo"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []json.RawMessage `json:"authMethods"`
}

// NewSessionRequest is the params of session/new.
type NewSessionRequest struct {
	Cwd                   string            `json:"cwd"`
	MCPServers            []json.RawMessage `json:"mcpServers"`
	AdditionalDirectories []string          `json:"additionalDirectories,omitempty"`
}

// LoadSessionRequest is the params of session/load.
type LoadSessionRequest struct {
	SessionID             string            `json:"sessionId"`
	Cwd                   string            `json:"cwd"`
	MCPServers            []json.RawMessage `json:"mcpServers"`
	AdditionalDirectories []string          `json:"additionalDirectories,omitempty"`
}

// SessionModeState is the modes object of session/new and session/load.
type SessionModeState struct {
	AvailableModes []SessionMode `json:"availableModes"`
	CurrentModeID  string        `json:"currentModeId"`
}

// SessionMode is one selectable mode.
type SessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// ConfigOption is one select-type session config option.
type ConfigOption struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	Category     string         `json:"category,omitempty"`
	Type         string         `json:"type"`
	CurrentValue string         `json:"currentValue"`
	Options      []SelectOption `json:"options"`
}

// SelectOption is one value of a select config option.
type SelectOption struct {
	Value       string `json:"value"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// ConfigOptionUpdate announces a changed option value (the whole list).
type ConfigOptionUpdate struct {
	SessionUpdate UpdateKind     `json:"sessionUpdate"`
	ConfigOptions []ConfigOption `json:"configOptions"`
}

// NewSessionResponse is the result of session/new.
type NewSessionResponse struct {
	SessionID     string            `json:"sessionId"`
	ConfigOptions []ConfigOption    `json:"configOptions,omitempty"`
	Modes         *SessionModeState `json:"modes,omitempty"`
}

// LoadSessionResponse is the result of session/load.
type LoadSessionResponse struct {
	ConfigOptions []ConfigOption    `json:"configOptions,omitempty"`
	Modes         *SessionModeState `json:"modes,omitempty"`
}

// ContentBlock is an inbound prompt content block.
type ContentBlock struct {
	Type     string            `json:"type"`
	Text     string            `json:"text,omitempty"`
	Name     string            `json:"name,omitempty"`
	URI      string            `json:"uri,omitempty"`
	MimeType string            `json:"mimeType,omitempty"`
	Data     string            `json:"data,omitempty"`
	Resource *EmbeddedResource `json:"resource,omitempty"`
}

// EmbeddedResource is the resource of a "resource" prompt block (text or
// blob contents).
type EmbeddedResource struct {
	URI      string `json:"uri"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// PromptRequest is the params of session/prompt.
type PromptRequest struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
}

// PromptResponse is the result of session/prompt.
type PromptResponse struct {
	StopReason StopReason `json:"stopReason"`
}

// StopReason says why a prompt's turn ended.
type StopReason string

// Stop reasons.
const (
	StopEndTurn   StopReason = "end_turn"
	StopMaxTokens StopReason = "max_tokens"
	StopCancelled StopReason = "cancelled"
)

// CancelNotification is the params of session/cancel.
type CancelNotification struct {
	SessionID string `json:"sessionId"`
}

// SetModeRequest is the params of session/set_mode.
type SetModeRequest struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

// SetConfigOptionRequest is the params of session/set_config_option.
type SetConfigOptionRequest struct {
	SessionID string          `json:"sessionId"`
	ConfigID  string          `json:"configId"`
	Value     json.RawMessage `json:"value"`
}

// SetConfigOptionResponse is the result of session/set_config_option.
type SetConfigOptionResponse struct {
	ConfigOptions []ConfigOption `json:"configOptions"`
}

// SessionNotification is the params of session/update.
type SessionNotification struct {
	SessionID string `json:"sessionId"`
	Update    any    `json:"update"`
}

// TextContent is a text content block in updates.
type TextContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ContentChunk is agent_message_chunk, agent_thought_chunk and
// user_message_chunk.
type ContentChunk struct {
	SessionUpdate UpdateKind  `json:"sessionUpdate"`
	Content       TextContent `json:"content"`
}

// CurrentModeUpdate announces the session's mode.
type CurrentModeUpdate struct {
	SessionUpdate UpdateKind `json:"sessionUpdate"`
	CurrentModeID string     `json:"currentModeId"`
}

// PlanEntry is one entry of a plan update.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

// PlanUpdate is the plan session update.
type PlanUpdate struct {
	SessionUpdate UpdateKind  `json:"sessionUpdate"`
	Entries       []PlanEntry `json:"entries"`
}

// ToolCallContent is one content item of a tool call card.
type ToolCallContent struct {
	Type       string       `json:"type"`
	Content    *TextContent `json:"content,omitempty"`
	Path       string       `json:"path,omitempty"`
	OldText    *string      `json:"oldText,omitempty"`
	NewText    *string      `json:"newText,omitempty"`
	TerminalID string       `json:"terminalId,omitempty"`
}

// MarshalJSON keeps oldText present (as null) on diff content.
func (c ToolCallContent) MarshalJSON() ([]byte, error) {
	if c.Type == "diff" {
		type diff struct {
			Type    string  `json:"type"`
			Path    string  `json:"path"`
			OldText *string `json:"oldText"`
			NewText string  `json:"newText"`
		}
		nt := ""
		if c.NewText != nil {
			nt = *c.NewText
		}
		return marshal(diff{c.Type, c.Path, c.OldText, nt})
	}
	type plain ToolCallContent
	return marshal(plain(c))
}

// Location is a file a tool call touches.
type Location struct {
	Path string `json:"path"`
	Line *int   `json:"line,omitempty"`
}

// UpdateKind is a session/update's discriminator (its sessionUpdate).
type UpdateKind string

// The session updates the bridge sends.
const (
	UpdateUserMessageChunk  UpdateKind = "user_message_chunk"
	UpdateAgentMessageChunk UpdateKind = "agent_message_chunk"
	UpdateAgentThoughtChunk UpdateKind = "agent_thought_chunk"
	UpdateToolCall          UpdateKind = "tool_call"
	UpdateToolCallUpdate    UpdateKind = "tool_call_update"
	UpdatePlan              UpdateKind = "plan"
	UpdateAvailableCommands UpdateKind = "available_commands_update"
	UpdateCurrentMode       UpdateKind = "current_mode_update"
	UpdateConfigOption      UpdateKind = "config_option_update"
	UpdateSessionInfo       UpdateKind = "session_info_update"
	UpdateUsage             UpdateKind = "usage_update"
	// UpdateCompaction and UpdateSubagent are extensions (unstable
	// schema), sent only to clients that advertise them.
	UpdateCompaction UpdateKind = "compaction_update"
	UpdateSubagent   UpdateKind = "subagent_update"
)

// ToolCallStatus is a tool call card's status.
type ToolCallStatus string

// The tool call statuses.
const (
	StatusPending    ToolCallStatus = "pending"
	StatusInProgress ToolCallStatus = "in_progress"
	StatusCompleted  ToolCallStatus = "completed"
	StatusFailed     ToolCallStatus = "failed"
)
