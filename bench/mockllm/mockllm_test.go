package mockllm

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newServer(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// data frames "data: X\n\n".
func data(payloads ...string) string {
	var sb strings.Builder
	for _, p := range payloads {
		sb.WriteString("data: " + p + "\n\n")
	}
	return sb.String()
}

// events frames "event: NAME\ndata: X\n\n" from name, payload pairs.
func events(pairs ...string) string {
	var sb strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		sb.WriteString("event: " + pairs[i] + "\ndata: " + pairs[i+1] + "\n\n")
	}
	return sb.String()
}

func chatChunk(n, choice string) string {
	return `{"id":"chatcmpl-mock-` + n + `","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[` + choice + `]}`
}

func TestOpenAITextStream(t *testing.T) {
	s := newServer(t, Options{})
	status, body := post(t, s.URL()+"/v1/chat/completions",
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, status)
	delta := func(d string) string { return chatChunk("1", `{"index":0,"delta":`+d+`,"finish_reason":null}`) }
	assert.Equal(t, data(
		delta(`{"role":"assistant","content":""}`),
		delta(`{"reasoning_content":"The user"}`),
		delta(`{"reasoning_content":" wants a"}`),
		delta(`{"reasoning_content":" short"}`),
		delta(`{"reasoning_content":" greeting."}`),
		delta(`{"content":"Hello"}`),
		delta(`{"content":" from"}`),
		delta(`{"content":" the"}`),
		delta(`{"content":" mock"}`),
		delta(`{"content":" LLM"}`),
		delta(`{"content":"."}`),
		chatChunk("1", `{"index":0,"delta":{},"finish_reason":"stop"}`),
		`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[],"usage":{"prompt_tokens":28,"completion_tokens":10,"total_tokens":38}}`,
		`[DONE]`,
	), body)
	recs := s.Records(0)
	require.Len(t, recs, 1)
	assert.Equal(t, DialectOpenAI, recs[0].Dialect)
	assert.Equal(t, KindText, recs[0].Kind)
	assert.Equal(t, 10, recs[0].Chunks)
	assert.Equal(t, int64(len(body)), recs[0].Bytes)
	fb, ok := s.FirstByteSince(0)
	assert.True(t, ok)
	assert.Equal(t, recs[0].FirstByte, fb)
	assert.False(t, fb.Before(recs[0].Start) || fb.After(recs[0].End))
	_, ok = s.FirstByteSince(1)
	assert.False(t, ok)
}

func TestOpenAIToolCallAndFollowUp(t *testing.T) {
	s := newServer(t, Options{})
	_, body := post(t, s.URL()+"/v1/chat/completions",
		`{"model":"m","stream":true,"tools":[{}],"messages":[{"role":"user","content":[{"type":"text","text":"MOCK:TOOL MOCK:PATH=/w/a.txt"}]}]}`)
	delta := func(d string) string { return chatChunk("1", `{"index":0,"delta":`+d+`,"finish_reason":null}`) }
	assert.Equal(t, data(
		delta(`{"role":"assistant","content":""}`),
		delta(`{"tool_calls":[{"index":0,"id":"call_mock_1","type":"function","function":{"name":"write","arguments":"{\"file_path\":\"a.txt\",\"content\":\"hello from mockl"}}]}`),
		delta(`{"tool_calls":[{"index":0,"function":{"arguments":"lm\\n\"}"}}]}`),
		chatChunk("1", `{"index":0,"delta":{},"finish_reason":"tool_calls"}`),
		`[DONE]`,
	), body)

	// Without tools in the request, MOCK:TOOL is ordinary text.
	_, body = post(t, s.URL()+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"MOCK:TOOL"}]}`)
	assert.Contains(t, body, `"content":"Hello"`)

	// The follow-up carrying the tool result gets a short closing text.
	_, body = post(t, s.URL()+"/v1/chat/completions", `{"model":"m","stream":false,"tools":[{}],"messages":[`+
		`{"role":"user","content":"MOCK:TOOL"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","tool_call_id":"call_mock_1","content":"ok"}]}`)
	assert.Equal(t, `{"id":"chatcmpl-mock-3","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":`+
		`{"role":"assistant","content":"Done: the file is written."},"finish_reason":"stop"}],"usage":{"prompt_tokens":52,"completion_tokens":5,"total_tokens":57}}`, body)
	kinds := []string{}
	for _, r := range s.Records(0) {
		kinds = append(kinds, r.Kind)
	}
	assert.Equal(t, []string{KindTool, KindText, KindFollowUp}, kinds)
}

func TestResponsesToolCallStream(t *testing.T) {
	s := newServer(t, Options{Tools: map[string]ToolCall{DialectResponses: {Name: "shell", Arguments: `{"command":["touch","{{path}}"]}`}}})
	_, body := post(t, s.URL()+"/v1/responses",
		`{"model":"m","stream":true,"tools":[{}],"input":[{"role":"user","content":[{"type":"input_text","text":"MOCK:TOOL MOCK:PATH=/w/a.txt"}]}]}`)
	resp := `{"id":"resp_mock_1","object":"response","created_at":1700000000,"status":"in_progress","model":"m","output":[]}`
	item := `{"id":"fc_mock_1","type":"function_call","status":"completed","arguments":"{\"command\":[\"touch\",\"/w/a.txt\"]}","call_id":"call_mock_1","name":"shell"}`
	assert.Equal(t, events(
		"response.created", `{"type":"response.created","sequence_number":0,"response":`+resp+`}`,
		"response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":`+resp+`}`,
		"response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"fc_mock_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_mock_1","name":"shell"}}`,
		"response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_mock_1","output_index":0,"delta":"{\"command\":[\"touch\",\"/w/a.txt\"]}"}`,
		"response.function_call_arguments.done", `{"type":"response.function_call_arguments.done","sequence_number":4,"item_id":"fc_mock_1","output_index":0,"arguments":"{\"command\":[\"touch\",\"/w/a.txt\"]}"}`,
		"response.output_item.done", `{"type":"response.output_item.done","sequence_number":5,"output_index":0,"item":`+item+`}`,
		"response.completed", `{"type":"response.completed","sequence_number":6,"response":{"id":"resp_mock_1","object":"response","created_at":1700000000,"status":"completed","model":"m","output":[`+item+`],"usage":{"input_tokens":35,"input_tokens_details":{"cached_tokens":0},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":36}}}`,
	), body)

	// A function_call_output as the last input item is a follow-up.
	_, body = post(t, s.URL()+"/v1/responses", `{"model":"m","stream":true,"input":[{"type":"function_call_output","call_id":"call_mock_1","output":"ok"}]}`)
	assert.Contains(t, body, `"text":"Done: the file is written."`)
	assert.True(t, strings.HasSuffix(body, "\n\n"))
}

func TestResponsesTextStreamShape(t *testing.T) {
	s := newServer(t, Options{})
	_, body := post(t, s.URL()+"/responses", `{"model":"m","stream":true,"input":"hi"}`)
	var types []string
	for _, line := range strings.Split(body, "\n") {
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			types = append(types, name)
		}
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added"}
	for range 4 {
		want = append(want, "response.reasoning_summary_text.delta")
	}
	want = append(want, "response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added")
	for range 6 {
		want = append(want, "response.output_text.delta")
	}
	want = append(want, "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed")
	assert.Equal(t, want, types)
	assert.Contains(t, body, `"text":"Hello from the mock LLM."`)
}

func TestAnthropicThinkingTextStream(t *testing.T) {
	s := newServer(t, Options{})
	_, body := post(t, s.URL()+"/v1/messages",
		`{"model":"c","stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"}]}`)
	delta := func(i, d string) string {
		return `{"type":"content_block_delta","index":` + i + `,"delta":` + d + `}`
	}
	assert.Equal(t, events(
		"message_start", `{"type":"message_start","message":{"id":"msg_mock_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":31,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		"content_block_delta", delta("0", `{"type":"thinking_delta","thinking":"The user"}`),
		"content_block_delta", delta("0", `{"type":"thinking_delta","thinking":" wants a"}`),
		"content_block_delta", delta("0", `{"type":"thinking_delta","thinking":" short"}`),
		"content_block_delta", delta("0", `{"type":"thinking_delta","thinking":" greeting."}`),
		"content_block_delta", delta("0", `{"type":"signature_delta","signature":"bW9jay1zaWduYXR1cmU="}`),
		"content_block_stop", `{"type":"content_block_stop","index":0}`,
		"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		"content_block_delta", delta("1", `{"type":"text_delta","text":"Hello"}`),
		"content_block_delta", delta("1", `{"type":"text_delta","text":" from"}`),
		"content_block_delta", delta("1", `{"type":"text_delta","text":" the"}`),
		"content_block_delta", delta("1", `{"type":"text_delta","text":" mock"}`),
		"content_block_delta", delta("1", `{"type":"text_delta","text":" LLM"}`),
		"content_block_delta", delta("1", `{"type":"text_delta","text":"."}`),
		"content_block_stop", `{"type":"content_block_stop","index":1}`,
		"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":10}}`,
		"message_stop", `{"type":"message_stop"}`,
	), body)
}

func TestAnthropicToolUseAndFollowUp(t *testing.T) {
	s := newServer(t, Options{Tools: map[string]ToolCall{"claude/anthropic": {Name: "Write", Arguments: `{"file_path":"{{path}}"}`}}})
	_, body := post(t, s.URL()+"/agent/claude/v1/messages",
		`{"model":"c","stream":true,"tools":[{}],"messages":[{"role":"user","content":[{"type":"text","text":"MOCK:TOOL MOCK:PATH=/w/a.txt"}]}]}`)
	assert.Contains(t, body, events(
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_mock_1","name":"Write","input":{}}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":\"/w/a.txt\"}"}}`,
		"content_block_stop", `{"type":"content_block_stop","index":0}`,
		"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":1}}`,
		"message_stop", `{"type":"message_stop"}`))
	_, body = post(t, s.URL()+"/agent/claude/v1/messages", `{"model":"c","stream":false,"messages":[{"role":"user","content":"MOCK:TOOL"},`+
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_mock_1","name":"Write","input":{}}]},`+
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_mock_1","content":"ok"}]}]}`)
	assert.Contains(t, body, `"content":[{"type":"text","text":"Done: the file is written."}],"stop_reason":"end_turn"`)
	recs := s.Records(0)
	require.Len(t, recs, 2)
	assert.Equal(t, "claude", recs[0].Label)
	assert.Equal(t, KindFollowUp, recs[1].Kind)
}

func TestGeminiStreams(t *testing.T) {
	s := newServer(t, Options{Tools: map[string]ToolCall{DialectGemini: {Name: "write_file", Arguments: `{"file_path":"{{path}}"}`}}})
	_, body := post(t, s.URL()+"/v1beta/models/g:streamGenerateContent?alt=sse",
		`{"contents":[{"role":"user","parts":[{"text":"MOCK:TOOL MOCK:PATH=/w/a.txt"}]}],"tools":[{}]}`)
	assert.Equal(t, `data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"write_file","args":{"file_path":"/w/a.txt"}}}],"role":"model"},"finishReason":"STOP","index":0}],`+
		`"usageMetadata":{"promptTokenCount":24,"candidatesTokenCount":1,"totalTokenCount":25},"modelVersion":"g","responseId":"mock-1"}`+"\r\n\r\n", body)

	_, body = post(t, s.URL()+"/v1beta/models/g:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	frame := func(text, tail string) string {
		return `data: {"candidates":[{"content":{"parts":[{"text":"` + text + `"}],"role":"model"},` + tail + `"index":0}],`
	}
	want := ""
	for _, w := range []string{"Hello", " from", " the", " mock", " LLM"} {
		want += frame(w, "") + `"modelVersion":"g","responseId":"mock-2"}` + "\r\n\r\n"
	}
	want += frame(".", `"finishReason":"STOP",`) + `"usageMetadata":{"promptTokenCount":14,"candidatesTokenCount":10,"totalTokenCount":24},"modelVersion":"g","responseId":"mock-2"}` + "\r\n\r\n"
	assert.Equal(t, want, body)

	// A functionResponse part is a follow-up; countTokens and JSON mode work.
	_, body = post(t, s.URL()+"/v1beta/models/g:generateContent", `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"write_file","response":{}}}]}]}`)
	assert.Contains(t, body, `"parts":[{"text":"Done: the file is written."}]`)
	_, body = post(t, s.URL()+"/v1beta/models/g:countTokens", `{"contents":[]}`)
	assert.Equal(t, `{"totalTokens":4}`, body)
	_, body = post(t, s.URL()+"/v1beta/models/g:generateContent", `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json"}}`)
	assert.Contains(t, body, `next_speaker`)
}

func TestChunksAndSlowCancel(t *testing.T) {
	s := newServer(t, Options{SlowInterval: 5 * time.Millisecond})
	_, body := post(t, s.URL()+"/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"MOCK:CHUNKS=1000"}]}`)
	assert.Equal(t, 1000, strings.Count(body, `"delta":{"content":"w`))
	assert.Contains(t, body, `"delta":{"content":"w999 "}`)

	// Only streams are slow: a side query quoting the prompt answers at once.
	_, body = post(t, s.URL()+"/v1/messages", `{"model":"c","stream":false,"messages":[{"role":"user","content":"MOCK:SLOW"}]}`)
	assert.Contains(t, body, `"text":"Hello from the mock LLM."`)

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"MOCK:SLOW"}]}`))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r := bufio.NewReader(resp.Body)
	for range 3 { // role chunk, then two content chunks
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		_, _ = r.ReadString('\n')
		assert.True(t, strings.HasPrefix(line, "data: "), line)
	}
	cancel()
	_ = resp.Body.Close()
	require.Eventually(t, func() bool { return len(s.Records(2)) == 1 }, 2*time.Second, time.Millisecond)
	rec := s.Records(2)[0]
	assert.Equal(t, KindSlow, rec.Kind)
	assert.True(t, rec.Aborted)
	assert.Less(t, rec.Chunks, 100)
}

func TestBounds(t *testing.T) {
	_, err := New(Options{Addr: "0.0.0.0:0"})
	assert.ErrorContains(t, err, "not a loopback IP")
	_, err = New(Options{Addr: "localhost:0"})
	assert.Error(t, err)

	s := newServer(t, Options{MaxBodyBytes: 100, MaxConcurrent: 1, SlowInterval: time.Millisecond, SlowMax: 300 * time.Millisecond, MaxChunks: 5})
	status, _ := post(t, s.URL()+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("x", 200)+`"}]}`)
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	_, body := post(t, s.URL()+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"MOCK:CHUNKS=99"}]}`)
	assert.Equal(t, 5, strings.Count(body, `"content":"w`))

	done := make(chan string)
	go func() {
		resp, err := http.Post(s.URL()+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"MOCK:SLOW"}]}`))
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		done <- string(b)
	}()
	require.Eventually(t, func() bool { return s.LastSeq() == 3 }, time.Second, time.Millisecond)
	status, _ = post(t, s.URL()+"/v1/chat/completions", `{}`)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	slow := <-done // bounded by SlowMax
	assert.Equal(t, 300, strings.Count(slow, `"content":"w`))
	assert.True(t, strings.HasSuffix(slow, "data: [DONE]\n\n"))

	status, _ = post(t, s.URL()+"/v1/unknown", `{}`)
	assert.Equal(t, http.StatusNotFound, status)
	status, _ = post(t, s.URL()+"/v1/chat/completions", `not json`)
	assert.Equal(t, http.StatusBadRequest, status)
}

func TestToolScripts(t *testing.T) {
	for d, tc := range DefaultTools() {
		args := strings.NewReplacer("{{path}}", "/w/x.txt", "{{base}}", "x.txt").Replace(tc.Arguments)
		var obj map[string]any
		assert.NoError(t, json.Unmarshal([]byte(args), &obj), d)
	}
	key, tc, err := ParseToolFlag(`codex/responses=shell:{"command":["true"]}`)
	require.NoError(t, err)
	assert.Equal(t, "codex/responses", key)
	assert.Equal(t, ToolCall{Name: "shell", Arguments: `{"command":["true"]}`}, tc)
	for _, bad := range []string{"openai", "openai=write", "nope=write:{}", `openai=write:[1]`, "=write:{}"} {
		_, _, err := ParseToolFlag(bad)
		assert.Error(t, err, bad)
	}
	// {{path}} is JSON-escaped.
	s := newServer(t, Options{})
	_, body := post(t, s.URL()+"/v1/messages", `{"model":"c","stream":false,"tools":[{}],"messages":[{"role":"user","content":"MOCK:TOOL MOCK:PATH=C:\\x\"y"}]}`)
	assert.Contains(t, body, `"input":{"file_path":"C:\\x\"y","content":"hello from mockllm\n"}`)
}

func TestModelsEndpoint(t *testing.T) {
	s := newServer(t, Options{})
	resp, err := http.Get(s.URL() + "/v1/models")
	require.NoError(t, err)
	defer resp.Body.Close()
	var m struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	require.Len(t, m.Data, 1)
	assert.Equal(t, "mock", m.Data[0].ID)
}
