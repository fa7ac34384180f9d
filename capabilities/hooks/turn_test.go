package hooks_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/hooks"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/capabilities/todo"
	"github.com/dsh-acp/dsh-acp/internal/proctree"
	"github.com/dsh-acp/dsh-acp/session"
)

// twoSteps calls todo_write once, then answers every call.
func twoSteps() *llmtest.Model {
	return llmtest.New(func(_ context.Context, c llmtest.Call) llmtest.Step {
		if c.N == 1 {
			return llmtest.Step{Chunks: append(llmtest.ToolCall(0, "c1", "todo_write", `{"todos":[{"content":"a","status":"pending"}]}`),
				llmtest.Finish(llm.FinishToolCalls))}
		}
		return llmtest.Step{Chunks: []llm.Chunk{llmtest.Text(0, "done"), llmtest.Finish(llm.FinishStop)}}
	})
}

// TestBadHooksNeverWedgeATurn runs a real turn through hooks that misbehave
// at every point: malformed JSON, megabytes of output, a background child,
// exit 2 with no stderr, and one that never exits.
func TestBadHooksNeverWedgeATurn(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"hooks":{
	  "UserPromptSubmit":[{"hooks":[{"command":"sleep 300 & echo $! > child.pid; echo '{\"decision\":'"}]}],
	  "PreToolUse":[{"matcher":"todo_write","hooks":[{"command":"head -c 5000000 /dev/zero | tr '\\0' '{'"}]}],
	  "PostToolUse":[{"hooks":[{"command":"exit 2"}]}],
	  "Stop":[{"hooks":[{"command":"exec sleep 300","timeout":1}]}]}}`
	c, err := hooks.Parse(hooks.Claude, []byte(cfg), hooks.ParseOptions{})
	require.NoError(t, err)
	bridge := &hooks.Bridge{Config: c, Runner: &hooks.Runner{}, Log: zerolog.Nop()}
	rt := agent.NewRuntime(agent.Config{
		Model: "m", Provider: twoSteps(), Clock: func() int64 { return 0 }, NewID: func() string { return "s" },
		Tools:   func(capabilities.Env) *capabilities.Registry { return capabilities.NewRegistry(todo.Tool{}) },
		Log:     zerolog.Nop(),
		Members: func(pipeline.Conversation) []any { return []any{bridge} },
	})
	s, err := rt.NewSession(context.Background(), agent.SessionOptions{Cwd: dir})
	require.NoError(t, err)
	start := time.Now()
	r := s.Prompt(context.Background(), "go")
	require.Less(t, time.Since(start), 20*time.Second)
	require.Equal(t, session.EndCompleted, r.Kind)

	var results []hooks.Result
	var toolResult session.ToolResult
	for _, e := range s.Log().Events() {
		switch e.Type {
		case hooks.TypeHookResult:
			var hr hooks.Result
			require.NoError(t, e.Decode(&hr))
			results = append(results, hr)
		case session.TypeToolResult:
			require.NoError(t, e.Decode(&toolResult))
		}
	}
	var got []string
	for _, hr := range results {
		code := "none"
		if hr.ExitCode != nil {
			code = strconv.Itoa(*hr.ExitCode)
		}
		got = append(got, hr.Point+" "+hr.Decision+" "+code)
	}
	require.Equal(t, []string{
		"UserPromptSubmit pass 0", // malformed JSON: no decision
		"PreToolUse pass 0",       // megabytes of '{': not an object, no decision
		"PostToolUse block 2",     // exit 2, no stderr
		"Stop pass none",          // killed at its timeout: no exit code
		"Stop pass none",
	}, got)
	require.Contains(t, results[3].StderrSummary, "hook timed out after 1s and was killed")
	require.Equal(t, []session.Block{session.TextBlock("blocked by PostToolUse hook")}, toolResult.Content)
	require.True(t, toolResult.IsError)

	raw, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !proctree.Running(pid) }, 5*time.Second, 10*time.Millisecond,
		"the prompt hook's background child was killed")
	require.NoError(t, s.Close(context.Background()))
}
