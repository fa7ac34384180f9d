package mockllm

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// parseGemini reads a Gemini generateContent request; the model comes
// from the path (…/models/MODEL:streamGenerateContent).
func parseGemini(body []byte, r *http.Request) (*parsed, error) {
	var req struct {
		Tools            []json.RawMessage `json:"tools"`
		GenerationConfig *struct {
			ResponseMimeType string `json:"responseMimeType"`
			ThinkingConfig   *struct {
				IncludeThoughts bool `json:"includeThoughts"`
			} `json:"thinkingConfig"`
		} `json:"generationConfig"`
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             string          `json:"text"`
				Thought          bool            `json:"thought"`
				FunctionResponse json.RawMessage `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := decodeObject(body, &req); err != nil {
		return nil, err
	}
	path := r.URL.Path
	model := path[strings.LastIndex(path, "/models/")+len("/models/"):]
	model, method, _ := strings.Cut(model, ":")
	p := &parsed{Model: model, Stream: method == "streamGenerateContent", HasTools: len(req.Tools) > 0}
	if g := req.GenerationConfig; g != nil {
		p.JSONMode = g.ResponseMimeType == "application/json"
		p.Thinking = g.ThinkingConfig != nil && g.ThinkingConfig.IncludeThoughts
	}
	if n := len(req.Contents); n > 0 {
		for _, part := range req.Contents[n-1].Parts {
			p.ToolResult = p.ToolResult || len(part.FunctionResponse) > 0
		}
	}
	for i := len(req.Contents) - 1; i >= 0 && p.UserText == ""; i-- {
		if c := req.Contents[i]; c.Role == "user" || c.Role == "" {
			var sb strings.Builder
			for _, part := range c.Parts {
				if !part.Thought {
					sb.WriteString(part.Text)
				}
			}
			p.UserText = sb.String()
		}
	}
	return p, nil
}

// writeGemini writes GenerateContentResponse chunks as SSE (`data: …`
// then \r\n\r\n, as Google does), or one response when not streaming. The
// last chunk carries finishReason and the usage.
func writeGemini(s *stream, p *parsed, r *Reply) {
	id := "mock-" + strconv.FormatUint(r.ID, 10)
	pt, ct := r.PromptTokens, r.CompletionTokens()
	thoughts := p.Thinking && len(r.Reasoning) > 0
	usage := func() raw {
		pairs := []any{"promptTokenCount", pt, "candidatesTokenCount", ct, "totalTokenCount", pt + ct}
		if thoughts {
			pairs = append(pairs, "thoughtsTokenCount", len(r.Reasoning))
		}
		return obj(pairs...)
	}
	response := func(parts []raw, last bool) raw {
		cand := []any{"content", obj("parts", parts, "role", "model")}
		if last {
			cand = append(cand, "finishReason", "STOP")
		}
		cand = append(cand, "index", 0)
		pairs := []any{"candidates", arr(obj(cand...))}
		if last {
			pairs = append(pairs, "usageMetadata", usage())
		}
		return obj(append(pairs, "modelVersion", p.Model, "responseId", id)...)
	}
	var call raw
	if tc := r.Tool; tc != nil {
		call = obj("functionCall", obj("name", tc.Name, "args", raw(tc.Arguments)))
	}
	if !p.Stream {
		var parts []raw
		if thoughts {
			parts = append(parts, obj("text", strings.Join(r.Reasoning, ""), "thought", true))
		}
		if text := r.FullText(); text != "" {
			parts = append(parts, obj("text", text))
		}
		if call != nil {
			parts = append(parts, call)
		}
		s.raw(response(parts, true))
		return
	}
	// Each chunk is held back until the next is known, so that the last
	// one can carry the finish reason.
	var pending raw
	var frame []byte
	send := func(part raw) bool {
		if pending != nil { // not the last: write it before pacing
			frame = append(append(append(frame[:0], "data: "...), response([]raw{pending}, false)...), "\r\n\r\n"...)
			s.raw(frame)
			s.sent()
		}
		if !s.chunk() {
			return false
		}
		pending = part
		return true
	}
	if thoughts {
		for _, t := range r.Reasoning {
			if !send(obj("text", t, "thought", true)) {
				return
			}
		}
	}
	for t := range r.Texts() {
		if !send(obj("text", t)) {
			return
		}
	}
	if call != nil && !send(call) {
		return
	}
	if pending == nil {
		pending = obj("text", "")
	} else {
		s.chunks++
		s.rec.Chunks++
	}
	s.raw(append(append([]byte("data: "), response([]raw{pending}, true)...), "\r\n\r\n"...))
}
