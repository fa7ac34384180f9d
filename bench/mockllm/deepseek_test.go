package mockllm

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/deepseek"
	"github.com/dsh-acp/dsh-acp/session"
)

// collect streams req through dsh-acp's own provider pointed at s.
func collect(t *testing.T, s *Server, req *llm.Request) []llm.Chunk {
	t.Helper()
	p := deepseek.New(deepseek.Config{BaseURL: s.URL() + "/v1", APIKey: "x"})
	var out []llm.Chunk
	for c, err := range p.Stream(context.Background(), req) {
		require.NoError(t, err)
		out = append(out, c)
	}
	return out
}

// TestDeepSeekProviderReadsMock checks that dsh-acp's provider parses the
// OpenAI dialect: reasoning, text, usage, a write tool call, the follow-up.
func TestDeepSeekProviderReadsMock(t *testing.T) {
	s := newServer(t, Options{})
	user := func(text string) llm.Message {
		return llm.Message{Role: "user", Content: []session.Block{{Type: session.BlockText, Text: text}}}
	}
	tools := []llm.ToolSchema{{Name: "write", Description: "w", Parameters: json.RawMessage(`{"type":"object"}`)}}

	chunks := collect(t, s, &llm.Request{Config: llm.Config{Model: "m"}, Messages: []llm.Message{user("hi")}})
	var text, reasoning string
	for _, c := range chunks {
		switch c.Type {
		case llm.ChunkTextDelta:
			text += c.Text
		case llm.ChunkReasoningDelta:
			reasoning += c.Text
		}
	}
	assert.Equal(t, "Hello from the mock LLM.", text)
	assert.Equal(t, "The user wants a short greeting.", reasoning)
	last := chunks[len(chunks)-1]
	require.Equal(t, llm.ChunkFinish, last.Type)
	assert.Equal(t, llm.FinishStop, last.Reason.Kind)
	usage := chunks[len(chunks)-2]
	require.Equal(t, llm.ChunkUsage, usage.Type)
	assert.Equal(t, 10, usage.Usage.OutputTokens)

	chunks = collect(t, s, &llm.Request{Config: llm.Config{Model: "m"}, Tools: tools,
		Messages: []llm.Message{user("MOCK:TOOL MOCK:PATH=/w/bench.txt")}})
	var call *session.Block
	for _, c := range chunks {
		if c.Type == llm.ChunkBlockEnd && c.Block.Type == session.BlockToolCall {
			call = c.Block
		}
	}
	require.NotNil(t, call)
	assert.Equal(t, "write", call.Name)
	assert.Equal(t, "call_mock_2", call.ID)
	assert.JSONEq(t, `{"file_path":"bench.txt","content":"hello from mockllm\n"}`, call.Arguments)
	assert.Equal(t, llm.FinishToolCalls, chunks[len(chunks)-1].Reason.Kind)

	chunks = collect(t, s, &llm.Request{Config: llm.Config{Model: "m"}, Tools: tools, Messages: []llm.Message{
		user("MOCK:TOOL"),
		{Role: "assistant", Content: []session.Block{*call}},
		{Role: "user", Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: call.ID,
			Content: []session.Block{{Type: session.BlockText, Text: "Created"}}}}},
	}})
	text = ""
	for _, c := range chunks {
		if c.Type == llm.ChunkTextDelta {
			text += c.Text
		}
	}
	assert.Equal(t, "Done: the file is written.", text)
}
