package mockllm

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// parseAnthropic reads an Anthropic Messages request.
func parseAnthropic(body []byte, _ *http.Request) (*parsed, error) {
	var req struct {
		Model    string            `json:"model"`
		Stream   bool              `json:"stream"`
		Tools    []json.RawMessage `json:"tools"`
		Thinking *struct {
			Type string `json:"type"`
		} `json:"thinking"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := decodeObject(body, &req); err != nil {
		return nil, err
	}
	p := &parsed{Model: req.Model, Stream: req.Stream, HasTools: len(req.Tools) > 0,
		Thinking: req.Thinking != nil && req.Thinking.Type != "" && req.Thinking.Type != "disabled"}
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
		var blocks []struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(req.Messages[n-1].Content, &blocks)
		for _, b := range blocks {
			p.ToolResult = p.ToolResult || b.Type == "tool_result"
		}
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			if t := textOf(req.Messages[i].Content); t != "" {
				p.UserText = t
				break
			}
		}
	}
	return p, nil
}

// anthropicSignature is the signature of mock thinking blocks.
const anthropicSignature = "bW9jay1zaWduYXR1cmU="

// writeAnthropic writes a Messages event stream, or the message object
// when the request did not ask for a stream.
func writeAnthropic(s *stream, p *parsed, r *Reply) {
	n := strconv.FormatUint(r.ID, 10)
	thinking := p.Thinking && len(r.Reasoning) > 0
	text := r.FullText()
	stop := "end_turn"
	if r.Tool != nil {
		stop = "tool_use"
	}
	pt, ct := r.PromptTokens, r.CompletionTokens()
	if !p.Stream {
		var content []raw
		if thinking {
			content = append(content, obj("type", "thinking", "thinking", strings.Join(r.Reasoning, ""), "signature", anthropicSignature))
		}
		if text != "" || r.Tool == nil {
			content = append(content, obj("type", "text", "text", text))
		}
		if tc := r.Tool; tc != nil {
			content = append(content, obj("type", "tool_use", "id", "toolu_mock_"+n, "name", tc.Name, "input", raw(tc.Arguments)))
		}
		s.raw(obj("id", "msg_mock_"+n, "type", "message", "role", "assistant", "model", p.Model, "content", content,
			"stop_reason", stop, "stop_sequence", nil, "usage", obj("input_tokens", pt, "output_tokens", ct)))
		return
	}
	var buf []byte
	emit := func(typ string, pairs ...any) {
		buf = appendObj(buf[:0], append([]any{"type", typ}, pairs...)...)
		s.event(typ, buf)
	}
	emit("message_start", "message", obj("id", "msg_mock_"+n, "type", "message", "role", "assistant", "model", p.Model,
		"content", raw("[]"), "stop_reason", nil, "stop_sequence", nil,
		"usage", obj("input_tokens", pt, "cache_creation_input_tokens", 0, "cache_read_input_tokens", 0, "output_tokens", 1)))
	idx := 0
	if thinking {
		emit("content_block_start", "index", idx, "content_block", obj("type", "thinking", "thinking", "", "signature", ""))
		for _, t := range r.Reasoning {
			if !s.chunk() {
				return
			}
			emit("content_block_delta", "index", idx, "delta", obj("type", "thinking_delta", "thinking", t))
			s.sent()
		}
		emit("content_block_delta", "index", idx, "delta", obj("type", "signature_delta", "signature", anthropicSignature))
		emit("content_block_stop", "index", idx)
		idx++
	}
	if text != "" || r.Tool == nil {
		emit("content_block_start", "index", idx, "content_block", obj("type", "text", "text", ""))
		for t := range r.Texts() {
			if !s.chunk() {
				return
			}
			emit("content_block_delta", "index", idx, "delta", obj("type", "text_delta", "text", t))
			s.sent()
		}
		emit("content_block_stop", "index", idx)
		idx++
	}
	if tc := r.Tool; tc != nil {
		emit("content_block_start", "index", idx, "content_block", obj("type", "tool_use", "id", "toolu_mock_"+n,
			"name", tc.Name, "input", raw("{}")))
		for _, piece := range splitArgs(tc.Arguments, argPiece) {
			if !s.chunk() {
				return
			}
			emit("content_block_delta", "index", idx, "delta", obj("type", "input_json_delta", "partial_json", piece))
			s.sent()
		}
		emit("content_block_stop", "index", idx)
	}
	emit("message_delta", "delta", obj("stop_reason", stop, "stop_sequence", nil), "usage", obj("output_tokens", ct))
	emit("message_stop")
}
