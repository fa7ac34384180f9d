package deepseek

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// noOutput is the content of a tool message whose result has no text.
const noOutput = "(no output)"

// chatRequest is the /chat/completions body in the contract's key order
// (session-log contract § 8). Optional keys are omitted when unset.
type chatRequest struct {
	Model           string        `json:"model"`
	Messages        []any         `json:"messages"`
	Stream          bool          `json:"stream"`
	StreamOptions   streamOptions `json:"stream_options"`
	Thinking        *Thinking     `json:"thinking,omitempty"`
	ReasoningEffort string        `json:"reasoning_effort,omitempty"`
	Tools           []wireTool    `json:"tools,omitempty"`
	Temperature     *float64      `json:"temperature,omitempty"`
	MaxTokens       *int          `json:"max_tokens,omitempty"`
	Stop            []string      `json:"stop,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// textMessage is a system or user message.
type textMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// assistantMessage is an assistant message; Content nil encodes as null.
type assistantMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
}

type wireToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function wireCallFunction `json:"function"`
}

type wireCallFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// toolMessage is one tool result.
type toolMessage struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// requestOptions are the provider-level request fields that are not part
// of llm.Request.
type requestOptions struct {
	thinking        *Thinking
	reasoningEffort string
}

// buildBody serializes req as the DeepSeek request body: exact key order,
// no HTML escaping, compact.
func buildBody(req *llm.Request, opt requestOptions) ([]byte, error) {
	body := chatRequest{
		Model:           req.Config.Model,
		Messages:        serializeMessages(req.System, req.Messages),
		Stream:          true,
		StreamOptions:   streamOptions{IncludeUsage: true},
		Thinking:        thinkingOf(req.Config, opt),
		ReasoningEffort: opt.reasoningEffort,
		Temperature:     req.Config.Temperature,
		MaxTokens:       req.Config.MaxTokens,
		Stop:            req.Config.Stop,
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage("null")
		}
		body.Tools = append(body.Tools, wireTool{Type: "function",
			Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	b, err := jsonx.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("deepseek: encoding request body: %w", err)
	}
	return b, nil
}

// serializeMessages maps the system prompt and history to DeepSeek
// messages (session-log contract § 8).
func serializeMessages(system string, msgs []llm.Message) []any {
	out := make([]any, 0, len(msgs)+1)
	if system != "" {
		out = append(out, textMessage{Role: "system", Content: system})
	}
	for _, m := range msgs {
		if m.Role == "assistant" {
			out = append(out, serializeAssistant(m.Content))
			continue
		}
		out = appendUser(out, m.Content)
	}
	return out
}

// serializeAssistant builds an assistant message: content is the joined
// text, "" when empty but with tool calls, else null; reasoning is echoed
// only alongside tool calls.
func serializeAssistant(blocks []session.Block) assistantMessage {
	var text, reasoning strings.Builder
	var calls []wireToolCall
	for _, b := range blocks {
		switch b.Type {
		case session.BlockText:
			text.WriteString(b.Text)
		case session.BlockReasoning:
			reasoning.WriteString(b.Text)
		case session.BlockToolCall:
			calls = append(calls, wireToolCall{ID: b.ID, Type: "function",
				Function: wireCallFunction{Name: b.Name, Arguments: b.Arguments}})
		}
	}
	msg := assistantMessage{Role: "assistant", ToolCalls: calls}
	if s := text.String(); s != "" || len(calls) > 0 {
		msg.Content = &s
	}
	if len(calls) > 0 {
		msg.ReasoningContent = reasoning.String()
	}
	return msg
}

// appendUser appends a user message: tool results become one tool message
// each, preceded by a user message with the joined text if there is any;
// otherwise a single user message with the joined text.
func appendUser(out []any, blocks []session.Block) []any {
	text := joinText(blocks)
	var results []toolMessage
	for _, b := range blocks {
		if b.Type != session.BlockToolResult {
			continue
		}
		content := joinText(b.Content)
		if content == "" {
			content = noOutput
		}
		results = append(results, toolMessage{Role: "tool", ToolCallID: b.ToolCallID, Content: content})
	}
	if parts := imageParts(blocks); parts != nil {
		// A message with images: OpenAI-style content parts.
		out = append(out, partsMessage{Role: "user", Content: append([]contentPart{{Type: "text", Text: text}}, parts...)})
		for _, r := range results {
			out = append(out, r)
		}
		return out
	}
	if len(results) == 0 {
		return append(out, textMessage{Role: "user", Content: text})
	}
	if text != "" {
		out = append(out, textMessage{Role: "user", Content: text})
	}
	for _, r := range results {
		out = append(out, r)
	}
	return out
}

// partsMessage is a user message of content parts (text and images).
type partsMessage struct {
	Role    string        `json:"role"`
	Content []contentPart `json:"content"`
}

// contentPart is one part of a partsMessage.
type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

// imageParts returns the image blocks of a user message as data-URL parts
// (nil when there are none). An image block is logged raw:
// {"type":"image","mimeType":…,"data":<base64>}.
func imageParts(blocks []session.Block) []contentPart {
	var parts []contentPart
	for _, b := range blocks {
		if b.Type != "image" || b.Raw == nil {
			continue
		}
		var img struct {
			MimeType string `json:"mimeType"`
			Data     string `json:"data"`
		}
		if json.Unmarshal(b.Raw, &img) != nil || img.Data == "" {
			continue
		}
		parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: "data:" + img.MimeType + ";base64," + img.Data}})
	}
	return parts
}

// joinText concatenates the text blocks of blocks.
func joinText(blocks []session.Block) string {
	var sb strings.Builder
	for _, b := range blocks {
		if b.Type == session.BlockText {
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

// thinkingOf is the request's thinking field: the request's own switch,
// else the provider's.
func thinkingOf(c llm.Config, opt requestOptions) *Thinking {
	if c.Thinking != "" {
		return &Thinking{Type: c.Thinking}
	}
	return opt.thinking
}
