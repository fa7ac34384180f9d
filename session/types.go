package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// Event types of the core vocabulary (session-log contract § 2).
const (
	TypeTurnStart          = "turn/start"
	TypeTurnEnd            = "turn/end"
	TypeStepStart          = "step/start"
	TypeStepEnd            = "step/end"
	TypeUserMessage        = "user/message"
	TypePromptBlocked      = "prompt/blocked"
	TypeContextMessage     = "context/message"
	TypeSteeringMessage    = "steering/message"
	TypeAssistantChunk     = "assistant/chunk"
	TypeAssistantMessage   = "assistant/message"
	TypeToolCall           = "tool/call"
	TypeToolResult         = "tool/result"
	TypeTodoWrite          = "todo/write"
	TypeRequestHeader      = "request/header"
	TypeRequestHeaderDelta = "request/header-delta"
	TypeSandboxMode        = "bash/sandbox-mode"
	TypeApprovalPolicy     = "approval/policy"
	TypeApprovalAsked      = "approval/asked"
	TypeApprovalDecided    = "approval/decided"
	TypeModeSet            = "mode/set"
)

// IsSurface reports whether events of type t carry surfaceOp (and so reach
// the model's history).
func IsSurface(t string) bool {
	switch t {
	case TypeUserMessage, TypeAssistantMessage, TypeToolResult, TypeContextMessage, TypeSteeringMessage:
		return true
	}
	return false
}

// Source says who authored a user-side message.
type Source struct {
	Kind   SourceKind `json:"kind"`
	Plugin string     `json:"plugin,omitempty"`
}

// SourceKind says who wrote a message.
type SourceKind string

// The message sources.
const (
	// SourceUser is the editor's user.
	SourceUser SourceKind = "user"
	// SourcePlugin is a part of the agent, named in Source.Plugin.
	SourcePlugin SourceKind = "plugin"
)

// UserSource is the source of prompts typed by the user.
var UserSource = Source{Kind: SourceUser}

// PluginSource is the source of a message the agent's part name wrote.
func PluginSource(name string) Source { return Source{Kind: SourcePlugin, Plugin: name} }

// TriggerKind says why a turn started.
type TriggerKind string

// The turn triggers.
const (
	// TriggerMessage is the user's prompt.
	TriggerMessage TriggerKind = "message"
	// TriggerInjection is a message the agent injected (a background
	// task's notice) outside a turn.
	TriggerInjection TriggerKind = "injection"
)

// Trigger says why a turn started.
type Trigger struct {
	Kind   TriggerKind `json:"kind"`
	Source Source      `json:"source"`
}

// TurnStart is the data of turn/start.
type TurnStart struct {
	Turn    int     `json:"turn"`
	Trigger Trigger `json:"trigger"`
}

// EndReason is why a turn ended. Fields appear only for their kinds:
// aborted/rejected carry Reason; error carries Step, Message and Code.
type EndReason struct {
	Kind    string `json:"kind"`
	Step    int    `json:"step,omitempty"`
	Message string `json:"message,omitempty"`
	Code    string `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Hint tells the user what to do about an error end (a model error's
	// llm.Error.Hint). It is shown to the editor, never logged.
	Hint string `json:"-"`
}

// Turn end reason kinds.
const (
	EndCompleted   = "completed"
	EndAborted     = "aborted"
	EndError       = "error"
	EndDisposed    = "disposed"
	EndMaxTokens   = "max-tokens"
	EndRejected    = "rejected"
	EndInterrupted = "interrupted"
)

// TurnEnd is the data of turn/end.
type TurnEnd struct {
	Turn   int       `json:"turn"`
	Reason EndReason `json:"reason"`
}

// StepRef is the data of step/start and step/end.
type StepRef struct {
	Turn int `json:"turn"`
	Step int `json:"step"`
}

// Message is the data of user/message and context/message.
type Message struct {
	Content []Block `json:"content"`
	Source  Source  `json:"source"`
}

// AssistantChunk is the data of assistant/chunk; Chunk is the stream chunk
// exactly as the provider produced it.
type AssistantChunk struct {
	Turn  int             `json:"turn"`
	Step  int             `json:"step"`
	Chunk json.RawMessage `json:"chunk"`
	// Kind and Text repeat the chunk's type and delta text for in-memory
	// subscribers (not serialized).
	Kind string `json:"-"`
	Text string `json:"-"`
}

// appendJSON is the hot-path encoding of an assistant/chunk payload.
func (a AssistantChunk) appendJSON(b []byte) []byte {
	b = append(b, `{"turn":`...)
	b = strconv.AppendInt(b, int64(a.Turn), 10)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(a.Step), 10)
	b = append(b, `,"chunk":`...)
	b = append(b, a.Chunk...)
	return append(b, '}')
}

// AssistantMessage is the data of assistant/message.
type AssistantMessage struct {
	Turn    int             `json:"turn"`
	Step    int             `json:"step"`
	Content []Block         `json:"content"`
	Usage   json.RawMessage `json:"usage,omitempty"`
}

// ToolCall is the data of tool/call; Arguments is the raw streamed string.
type ToolCall struct {
	Turn      int    `json:"turn"`
	Step      int    `json:"step"`
	CallID    string `json:"callId"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ErrorInfo names a coded harness error on a tool result.
type ErrorInfo struct {
	Name string `json:"name"`
	Code string `json:"code"`
}

// ToolResult is the data of tool/result.
type ToolResult struct {
	Turn    int             `json:"turn"`
	Step    int             `json:"step"`
	CallID  string          `json:"callId"`
	Content []Block         `json:"content"`
	IsError bool            `json:"isError"`
	Error   *ErrorInfo      `json:"error,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"`
}

// Todo is one entry of a todo/write list.
type Todo struct {
	Content string `json:"content"`
	Status  string `json:"status"`
}

// TodoWrite is the data of todo/write.
type TodoWrite struct {
	Todos []Todo `json:"todos"`
}

// Block is a content block: text, reasoning, tool-call or tool-result. Its
// JSON shape depends on Type; an unknown type round-trips through Raw.
type Block struct {
	Type       string
	Text       string
	ID         string // tool-call id
	Name       string // tool-call name
	Arguments  string // tool-call arguments
	ToolCallID string // tool-result
	Content    []Block
	IsError    *bool
	Raw        json.RawMessage
}

// Block types.
const (
	BlockText       = "text"
	BlockReasoning  = "reasoning"
	BlockToolCall   = "tool-call"
	BlockToolResult = "tool-result"
)

// TextBlock returns a text block.
func TextBlock(s string) Block { return Block{Type: BlockText, Text: s} }

// MarshalJSON emits the block in the key order of its type.
func (b Block) MarshalJSON() ([]byte, error) {
	switch b.Type {
	case BlockText, BlockReasoning:
		return jsonx.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{b.Type, b.Text})
	case BlockToolCall:
		return jsonx.Marshal(struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}{b.Type, b.ID, b.Name, b.Arguments})
	case BlockToolResult:
		content := b.Content
		if content == nil {
			content = []Block{}
		}
		return jsonx.Marshal(struct {
			Type       string  `json:"type"`
			ToolCallID string  `json:"toolCallId"`
			Content    []Block `json:"content"`
			IsError    *bool   `json:"isError,omitempty"`
		}{b.Type, b.ToolCallID, content, b.IsError})
	}
	if b.Raw != nil {
		return b.Raw, nil
	}
	return nil, fmt.Errorf("content block of unknown type %q", b.Type)
}

// UnmarshalJSON reads any content block.
func (b *Block) UnmarshalJSON(data []byte) error {
	var j struct {
		Type       string  `json:"type"`
		Text       string  `json:"text"`
		ID         string  `json:"id"`
		Name       string  `json:"name"`
		Arguments  string  `json:"arguments"`
		ToolCallID string  `json:"toolCallId"`
		Content    []Block `json:"content"`
		IsError    *bool   `json:"isError"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*b = Block{Type: j.Type, Text: j.Text, ID: j.ID, Name: j.Name, Arguments: j.Arguments, ToolCallID: j.ToolCallID, Content: j.Content, IsError: j.IsError}
	switch j.Type {
	case BlockText, BlockReasoning, BlockToolCall, BlockToolResult:
	default:
		b.Raw = bytes.Clone(data)
	}
	return nil
}

// Data marshals a payload for Event.Data.
func Data(v any) json.RawMessage {
	if c, ok := v.(AssistantChunk); ok {
		return c.appendJSON(make([]byte, 0, len(c.Chunk)+32))
	}
	b := jsonx.MustMarshal(v)
	if cap(b)-len(b) > len(b)/8 {
		b = bytes.Clone(b) // a log keeps it: no encoder slack
	}
	return b
}
