package mockllm

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// parseResponses reads an OpenAI Responses request.
func parseResponses(body []byte, _ *http.Request) (*parsed, error) {
	var req struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Tools  []json.RawMessage `json:"tools"`
		Input  json.RawMessage   `json:"input"`
	}
	if err := decodeObject(body, &req); err != nil {
		return nil, err
	}
	p := &parsed{Model: req.Model, Stream: req.Stream, HasTools: len(req.Tools) > 0}
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		p.UserText = s
		return p, nil
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(req.Input, &items)
	if n := len(items); n > 0 {
		p.ToolResult = strings.HasSuffix(items[n-1].Type, "_output")
	}
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Role == "user" && (items[i].Type == "" || items[i].Type == "message") {
			p.UserText = textOf(items[i].Content)
			break
		}
	}
	return p, nil
}

// responsesWriter numbers the events of one Responses stream.
type responsesWriter struct {
	s   *stream
	seq int
	buf []byte
}

// emit writes one typed event; pairs follow "type" and "sequence_number".
func (w *responsesWriter) emit(typ string, pairs ...any) {
	w.buf = appendObj(w.buf[:0], append([]any{"type", typ, "sequence_number", w.seq}, pairs...)...)
	w.seq++
	w.s.event(typ, w.buf)
}

// writeResponses writes a Responses event stream, or the response object
// when the request did not ask for a stream.
func writeResponses(s *stream, p *parsed, r *Reply) {
	n := strconv.FormatUint(r.ID, 10)
	id := "resp_mock_" + n
	response := func(status string, output []raw, usage raw) raw {
		pairs := []any{"id", id, "object", "response", "created_at", Created, "status", status,
			"model", p.Model, "output", output}
		if usage != nil {
			pairs = append(pairs, "usage", usage)
		}
		return obj(pairs...)
	}
	var output []raw
	reasoning := strings.Join(r.Reasoning, "")
	text := r.FullText()
	if len(r.Reasoning) > 0 {
		output = append(output, obj("id", "rs_mock_"+n, "type", "reasoning",
			"summary", arr(obj("type", "summary_text", "text", reasoning))))
	}
	if text != "" || r.Tool == nil {
		output = append(output, obj("id", "msg_mock_"+n, "type", "message", "status", "completed", "role", "assistant",
			"content", arr(obj("type", "output_text", "text", text, "annotations", raw("[]")))))
	}
	if tc := r.Tool; tc != nil {
		output = append(output, obj("id", "fc_mock_"+n, "type", "function_call", "status", "completed",
			"arguments", tc.Arguments, "call_id", "call_mock_"+n, "name", tc.Name))
	}
	pt, ct := r.PromptTokens, r.CompletionTokens()
	usage := obj("input_tokens", pt, "input_tokens_details", obj("cached_tokens", 0), "output_tokens", ct,
		"output_tokens_details", obj("reasoning_tokens", len(r.Reasoning)), "total_tokens", pt+ct)
	if !p.Stream {
		s.raw(response("completed", output, usage))
		return
	}
	w := &responsesWriter{s: s}
	w.emit("response.created", "response", response("in_progress", []raw{}, nil))
	w.emit("response.in_progress", "response", response("in_progress", []raw{}, nil))
	idx := 0
	if len(r.Reasoning) > 0 {
		item := "rs_mock_" + n
		w.emit("response.output_item.added", "output_index", idx, "item", obj("id", item, "type", "reasoning", "summary", raw("[]")))
		w.emit("response.reasoning_summary_part.added", "item_id", item, "output_index", idx, "summary_index", 0,
			"part", obj("type", "summary_text", "text", ""))
		for _, t := range r.Reasoning {
			if !s.chunk() {
				return
			}
			w.emit("response.reasoning_summary_text.delta", "item_id", item, "output_index", idx, "summary_index", 0, "delta", t)
			s.sent()
		}
		w.emit("response.reasoning_summary_text.done", "item_id", item, "output_index", idx, "summary_index", 0, "text", reasoning)
		w.emit("response.reasoning_summary_part.done", "item_id", item, "output_index", idx, "summary_index", 0,
			"part", obj("type", "summary_text", "text", reasoning))
		w.emit("response.output_item.done", "output_index", idx, "item", output[idx])
		idx++
	}
	if text != "" || r.Tool == nil {
		item := "msg_mock_" + n
		w.emit("response.output_item.added", "output_index", idx, "item", obj("id", item, "type", "message",
			"status", "in_progress", "role", "assistant", "content", raw("[]")))
		w.emit("response.content_part.added", "item_id", item, "output_index", idx, "content_index", 0,
			"part", obj("type", "output_text", "text", "", "annotations", raw("[]")))
		for t := range r.Texts() {
			if !s.chunk() {
				return
			}
			w.emit("response.output_text.delta", "item_id", item, "output_index", idx, "content_index", 0, "delta", t)
			s.sent()
		}
		w.emit("response.output_text.done", "item_id", item, "output_index", idx, "content_index", 0, "text", text)
		w.emit("response.content_part.done", "item_id", item, "output_index", idx, "content_index", 0,
			"part", obj("type", "output_text", "text", text, "annotations", raw("[]")))
		w.emit("response.output_item.done", "output_index", idx, "item", output[idx])
		idx++
	}
	if tc := r.Tool; tc != nil {
		item := "fc_mock_" + n
		w.emit("response.output_item.added", "output_index", idx, "item", obj("id", item, "type", "function_call",
			"status", "in_progress", "arguments", "", "call_id", "call_mock_"+n, "name", tc.Name))
		for _, piece := range splitArgs(tc.Arguments, argPiece) {
			if !s.chunk() {
				return
			}
			w.emit("response.function_call_arguments.delta", "item_id", item, "output_index", idx, "delta", piece)
			s.sent()
		}
		w.emit("response.function_call_arguments.done", "item_id", item, "output_index", idx, "arguments", tc.Arguments)
		w.emit("response.output_item.done", "output_index", idx, "item", output[idx])
	}
	w.emit("response.completed", "response", response("completed", output, usage))
}
