package mockllm

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// parseOpenAI reads a Chat Completions request.
func parseOpenAI(body []byte, _ *http.Request) (*parsed, error) {
	var req struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Tools     []json.RawMessage `json:"tools"`
		Functions []json.RawMessage `json:"functions"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := decodeObject(body, &req); err != nil {
		return nil, err
	}
	p := &parsed{Model: req.Model, Stream: req.Stream, HasTools: len(req.Tools)+len(req.Functions) > 0,
		IncludeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	if n := len(req.Messages); n > 0 {
		last := req.Messages[n-1].Role
		p.ToolResult = last == "tool" || last == "function"
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			p.UserText = textOf(req.Messages[i].Content)
			break
		}
	}
	return p, nil
}

// writeOpenAI writes a chat.completion.chunk stream, or a chat.completion
// when the request did not ask for a stream.
func writeOpenAI(s *stream, p *parsed, r *Reply) {
	id := "chatcmpl-mock-" + strconv.FormatUint(r.ID, 10)
	if !p.Stream {
		s.raw(openAICompletion(id, p, r))
		return
	}
	prefix := []byte(`{"id":"` + id + `","object":"chat.completion.chunk","created":` + strconv.Itoa(Created) + `,"model":`)
	prefix = append(jsonx.AppendString(prefix, p.Model), `,"choices":[`...)
	choice := func(delta []byte, finish string) {
		b := append(append(s.buf[:0], prefix...), `{"index":0,"delta":`...)
		b = append(b, delta...)
		b = append(append(b, `,"finish_reason":`...), finish...)
		s.buf = append(b, "}]}"...)
		s.event("", s.buf)
	}
	var d []byte
	choice([]byte(`{"role":"assistant","content":""}`), "null")
	for _, t := range r.Reasoning {
		if !s.chunk() {
			return
		}
		d = append(jsonx.AppendString(append(d[:0], `{"reasoning_content":`...), t), '}')
		choice(d, "null")
		s.sent()
	}
	for t := range r.Texts() {
		if !s.chunk() {
			return
		}
		d = append(jsonx.AppendString(append(d[:0], `{"content":`...), t), '}')
		choice(d, "null")
		s.sent()
	}
	finish := `"stop"`
	if tc := r.Tool; tc != nil {
		finish = `"tool_calls"`
		for i, piece := range splitArgs(tc.Arguments, argPiece) {
			if !s.chunk() {
				return
			}
			d = append(d[:0], `{"tool_calls":[{"index":0,`...)
			if i == 0 {
				d = append(d, `"id":"call_mock_`+strconv.FormatUint(r.ID, 10)+`","type":"function","function":{"name":`...)
				d = append(jsonx.AppendString(d, tc.Name), `,"arguments":`...)
			} else {
				d = append(d, `"function":{"arguments":`...)
			}
			d = append(jsonx.AppendString(d, piece), "}}]}"...)
			choice(d, "null")
			s.sent()
		}
	}
	choice([]byte(`{}`), finish)
	if p.IncludeUsage {
		pt, ct := r.PromptTokens, r.CompletionTokens()
		b := append(append(s.buf[:0], prefix...), `],"usage":{"prompt_tokens":`...)
		b = append(strconv.AppendInt(b, int64(pt), 10), `,"completion_tokens":`...)
		b = append(strconv.AppendInt(b, int64(ct), 10), `,"total_tokens":`...)
		s.buf = append(strconv.AppendInt(b, int64(pt+ct), 10), "}}"...)
		s.event("", s.buf)
	}
	s.event("", []byte("[DONE]"))
}

// openAICompletion is the non-streaming body.
func openAICompletion(id string, p *parsed, r *Reply) []byte {
	msg := []any{"role", "assistant", "content", r.FullText()}
	if len(r.Reasoning) > 0 {
		msg = append(msg, "reasoning_content", strings.Join(r.Reasoning, ""))
	}
	finish := "stop"
	if tc := r.Tool; tc != nil {
		finish = "tool_calls"
		msg = append(msg, "tool_calls", arr(obj("id", "call_mock_"+strconv.FormatUint(r.ID, 10), "type", "function",
			"function", obj("name", tc.Name, "arguments", tc.Arguments))))
	}
	pt, ct := r.PromptTokens, r.CompletionTokens()
	return obj("id", id, "object", "chat.completion", "created", Created, "model", p.Model,
		"choices", arr(obj("index", 0, "message", obj(msg...), "finish_reason", finish)),
		"usage", obj("prompt_tokens", pt, "completion_tokens", ct, "total_tokens", pt+ct))
}
