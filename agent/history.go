package agent

import (
	"github.com/dsh-acp/dsh-acp/internal/jsonx"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
)

// deriveMessages computes the model's history from the log: one message per
// surface event, in order (session-log contract § 8).
func deriveMessages(events []session.Event) []llm.Message {
	var out []llm.Message
	for _, e := range events {
		switch e.Type {
		case session.TypeUserMessage:
			var m session.Message
			if e.Decode(&m) == nil {
				out = append(out, llm.Message{Role: "user", Content: m.Content})
			}
		case session.TypeAssistantMessage:
			var m session.AssistantMessage
			if e.Decode(&m) == nil && len(m.Content) > 0 {
				out = append(out, llm.Message{Role: "assistant", Content: m.Content})
			}
		case session.TypeToolResult:
			var r session.ToolResult
			if e.Decode(&r) == nil {
				isErr := r.IsError
				out = append(out, llm.Message{Role: "user", Content: []session.Block{{
					Type: session.BlockToolResult, ToolCallID: r.CallID, Content: r.Content, IsError: &isErr,
				}}})
			}
		case session.TypeContextMessage, session.TypeSteeringMessage:
			var m session.Message
			if e.Decode(&m) == nil {
				tag := "context"
				if e.Type == session.TypeSteeringMessage {
					tag = "steering"
				}
				content := []session.Block{session.TextBlock("<" + tag + " source=" + string(jsonx.MustMarshal(m.Source.Kind)) + ">")}
				content = append(content, m.Content...)
				content = append(content, session.TextBlock("</"+tag+">"))
				out = append(out, llm.Message{Role: "user", Content: content})
			}
		}
	}
	return out
}
