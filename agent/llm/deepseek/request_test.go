package deepseek

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
)

func text(s string) session.Block      { return session.TextBlock(s) }
func reasoning(s string) session.Block { return session.Block{Type: session.BlockReasoning, Text: s} }
func call(id, name, args string) session.Block {
	return session.Block{Type: session.BlockToolCall, ID: id, Name: name, Arguments: args}
}
func result(id string, isError bool, content ...session.Block) session.Block {
	return session.Block{Type: session.BlockToolResult, ToolCallID: id, Content: content, IsError: &isError}
}

// historyRequest exercises every serialization rule of session-log § 8;
// testdata/request-history.json is its expected body (a golden).
func historyRequest() *llm.Request {
	temp, maxTokens := 0.2, 4096
	return &llm.Request{
		SessionID: "sess-1",
		Config:    llm.Config{Model: "deepseek-v4-flash", Temperature: &temp, MaxTokens: &maxTokens, Stop: []string{"</done>"}},
		System:    "You are dsh, a coding agent. Work in <cwd> & report.",
		Tools: []llm.ToolSchema{
			{Name: "read", Description: "Read a file.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`)},
			{Name: "bash", Description: "Run a command.",
				Parameters: json.RawMessage(`{"type": "object", "properties": {"command": {"type": "string"}}}`)},
		},
		Messages: []llm.Message{
			{Role: "user", Content: []session.Block{text("Fix the failing test "), text("& explain.")}},
			// reasoning echoed because the message has tool calls; no text → content "".
			{Role: "assistant", Content: []session.Block{
				reasoning("Look at "), reasoning("the test first."),
				call("call_00_a", "read", `{"file_path":"a_test.go"}`),
				call("call_01_b", "bash", `{"command":"go test ./..."}`),
			}},
			{Role: "user", Content: []session.Block{result("call_00_a", false, text("package a\n"), text("func TestA(t *testing.T) {}"))}},
			{Role: "user", Content: []session.Block{result("call_01_b", true)}},
			// a context/message as derived: tags around the content, joined without separators.
			{Role: "user", Content: []session.Block{text(`<context source="plugin">`), text("branch: main\n"), text("</context>")}},
			// text and reasoning, no tool calls: reasoning is not echoed.
			{Role: "assistant", Content: []session.Block{reasoning("Now fix."), text("Fixed "), text("it.")}},
			// reasoning only: content null.
			{Role: "assistant", Content: []session.Block{reasoning("hmm")}},
			// text and a tool result in one message: user text first, then the tool message.
			{Role: "user", Content: []session.Block{text("also: "), result("call_02_c", false, text("ok")), text("see above")}},
			// tool call without reasoning and with text.
			{Role: "assistant", Content: []session.Block{text("Checking."), call("call_03_d", "read", `{}`)}},
			{Role: "user", Content: []session.Block{result("call_03_d", false, session.Block{Type: "image", Raw: json.RawMessage(`{"type":"image"}`)})}},
			{Role: "user", Content: []session.Block{text(`<steering source="user">`), text("stop"), text("</steering>")}},
		},
	}
}

func TestSerializeMessages(t *testing.T) {
	cases := []struct {
		name string
		msgs []llm.Message
		want string
	}{
		{"empty assistant", []llm.Message{{Role: "assistant"}}, `[{"role":"assistant","content":null}]`},
		{"empty user", []llm.Message{{Role: "user"}}, `[{"role":"user","content":""}]`},
		{"empty reasoning with call", []llm.Message{{Role: "assistant", Content: []session.Block{reasoning(""), call("c", "n", "")}}},
			`[{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":""}}]}]`},
		{"two results", []llm.Message{{Role: "user", Content: []session.Block{result("a", false, text("x")), result("b", false, text(""))}}},
			`[{"role":"tool","tool_call_id":"a","content":"x"},{"role":"tool","tool_call_id":"b","content":"(no output)"}]`},
		{"empty text with result", []llm.Message{{Role: "user", Content: []session.Block{text(""), result("a", false)}}},
			`[{"role":"tool","tool_call_id":"a","content":"(no output)"}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := buildBody(&llm.Request{Config: llm.Config{Model: "m"}, Messages: tc.msgs}, requestOptions{})
			require.NoError(t, err)
			var body struct {
				Messages json.RawMessage `json:"messages"`
			}
			require.NoError(t, json.Unmarshal(b, &body))
			require.Equal(t, tc.want, string(body.Messages))
		})
	}
}

func TestBuildBodyOptional(t *testing.T) {
	b, err := buildBody(&llm.Request{Config: llm.Config{Model: "m"}, System: "sys",
		Tools: []llm.ToolSchema{{Name: "t", Description: "d"}}}, requestOptions{thinking: &Thinking{Type: ThinkingDisabled}})
	require.NoError(t, err)
	require.Equal(t, `{"model":"m","messages":[{"role":"system","content":"sys"}],"stream":true,`+
		`"stream_options":{"include_usage":true},"thinking":{"type":"disabled"},`+
		`"tools":[{"type":"function","function":{"name":"t","description":"d","parameters":null}}]}`, string(b))

	b, err = buildBody(&llm.Request{Config: llm.Config{Model: "m", Stop: []string{}}}, requestOptions{reasoningEffort: "max"})
	require.NoError(t, err)
	require.Equal(t, `{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true},`+
		`"reasoning_effort":"max"}`, string(b))
}

// A request's own thinking switch (the session's Thinking menu) wins over
// the provider's.
func TestBuildBodyRequestThinking(t *testing.T) {
	b, err := buildBody(&llm.Request{Config: llm.Config{Model: "m", Thinking: ThinkingEnabled}}, requestOptions{thinking: &Thinking{Type: ThinkingDisabled}})
	require.NoError(t, err)
	require.Equal(t, `{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true},"thinking":{"type":"enabled"}}`, string(b))
}

// A user message with an image is sent as content parts, the image as a
// data URL.
func TestBuildBodyImage(t *testing.T) {
	img := session.Block{Type: "image", Raw: json.RawMessage(`{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}`)}
	b, err := buildBody(&llm.Request{Config: llm.Config{Model: "m"}, Messages: []llm.Message{{Role: "user", Content: []session.Block{session.TextBlock("what is it?"), img}}}}, requestOptions{})
	require.NoError(t, err)
	require.Equal(t, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what is it?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}],"stream":true,"stream_options":{"include_usage":true}}`, string(b))
}
