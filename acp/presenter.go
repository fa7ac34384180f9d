package acp

import (
	"encoding/json"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// marshal is the project's JSON encoding (no HTML escaping).
func marshal(v any) ([]byte, error) { return jsonx.Marshal(v) }

// presenter translates one session's log events into session/update
// payloads. The same translator serves live streaming and session/load
// replay (which also shows user messages).
type presenter struct {
	cwd          string
	terminal     bool
	includeUsers bool
	calls        map[string]rememberedCall
}

type rememberedCall struct {
	name string
	args any
}

func newPresenter(cwd string, terminal, includeUsers bool) *presenter {
	return &presenter{cwd: cwd, terminal: terminal, includeUsers: includeUsers, calls: map[string]rememberedCall{}}
}

// present returns the updates one event produces (often none).
func (p *presenter) present(ev session.Event) []any {
	switch ev.Type {
	case session.TypeAssistantChunk:
		var c struct {
			Chunk struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"chunk"`
		}
		if ev.Decode(&c) != nil {
			return nil
		}
		switch c.Chunk.Type {
		case "text-delta":
			return []any{ContentChunk{"agent_message_chunk", TextContent{"text", c.Chunk.Text}}}
		case "reasoning-delta":
			return []any{ContentChunk{"agent_thought_chunk", TextContent{"text", c.Chunk.Text}}}
		}
	case session.TypeUserMessage:
		if !p.includeUsers {
			return nil
		}
		var m session.Message
		if ev.Decode(&m) != nil {
			return nil
		}
		var out []any
		for _, b := range m.Content {
			if b.Type == session.BlockText {
				out = append(out, ContentChunk{"user_message_chunk", TextContent{"text", b.Text}})
			}
		}
		return out
	case session.TypeToolCall:
		var c session.ToolCall
		if ev.Decode(&c) != nil {
			return nil
		}
		args := parseArgs(c.Arguments)
		p.calls[c.CallID] = rememberedCall{name: c.Name, args: args}
		return []any{genericCall(c.CallID, c.Name, args)}
	case session.TypeToolResult:
		var r session.ToolResult
		if ev.Decode(&r) != nil {
			return nil
		}
		delete(p.calls, r.CallID)
		return []any{genericResult(r)}
	case session.TypeTodoWrite:
		var t session.TodoWrite
		if ev.Decode(&t) != nil {
			return nil
		}
		entries := make([]PlanEntry, 0, len(t.Todos))
		for _, td := range t.Todos {
			entries = append(entries, PlanEntry{Content: td.Content, Priority: "medium", Status: td.Status})
		}
		return []any{PlanUpdate{"plan", entries}}
	}
	return nil
}

// parseArgs parses a tool call's argument string the way the presenter
// sees it: "" is {}, unparseable text stays a string.
func parseArgs(s string) any {
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		c, err := jsonx.Compact([]byte(s))
		if err == nil {
			return json.RawMessage(c)
		}
	}
	return s
}

// ToolCallCard is the tool_call update.
type ToolCallCard struct {
	SessionUpdate string            `json:"sessionUpdate"`
	ToolCallID    string            `json:"toolCallId"`
	Title         string            `json:"title"`
	Kind          string            `json:"kind"`
	Status        string            `json:"status"`
	RawInput      any               `json:"rawInput,omitempty"`
	Locations     []Location        `json:"locations,omitempty"`
	Content       []ToolCallContent `json:"content,omitempty"`
}

// ToolCallUpdateCard is the generic tool_call_update.
type ToolCallUpdateCard struct {
	SessionUpdate string            `json:"sessionUpdate"`
	ToolCallID    string            `json:"toolCallId"`
	Status        string            `json:"status"`
	Content       []ToolCallContent `json:"content,omitempty"`
	Title         string            `json:"title,omitempty"`
}

func genericCall(callID, name string, args any) ToolCallCard {
	return ToolCallCard{SessionUpdate: "tool_call", ToolCallID: callID, Title: name, Kind: "other", Status: "in_progress", RawInput: args}
}

func genericResult(r session.ToolResult) ToolCallUpdateCard {
	status := "completed"
	if r.IsError {
		status = "failed"
	}
	return ToolCallUpdateCard{SessionUpdate: "tool_call_update", ToolCallID: r.CallID, Status: status, Content: textContent(r.Content)}
}

func textContent(blocks []session.Block) []ToolCallContent {
	var out []ToolCallContent
	for _, b := range blocks {
		if b.Type == session.BlockText {
			out = append(out, ToolCallContent{Type: "content", Content: &TextContent{"text", b.Text}})
		}
	}
	return out
}
