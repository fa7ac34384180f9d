package subagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/agenttest"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/bash"
	"github.com/dsh-acp/dsh-acp/capabilities/subagent"
	"github.com/dsh-acp/dsh-acp/session"
)

// model: a parent prompt "DELEGATE <tool> <prompt>" calls that tool once
// and then answers the tool's result; a child answers its prompt: "ECHO x"
// → x, "HANG" blocks, "ERR" fails, "MAXTOK" hits the token limit, "QUIET"
// answers nothing, "RECALL" answers the first user message it has seen.
func model(req *llm.Request) agenttest.Reply {
	last := agenttest.LastUser(req)
	if agenttest.LastIsToolResult(req) {
		return agenttest.Reply{Text: "PARENT_DONE"}
	}
	if rest, ok := strings.CutPrefix(last, "DELEGATE "); ok {
		tool, prompt, _ := strings.Cut(rest, " ")
		args, _ := json.Marshal(map[string]string{"description": "test", "prompt": prompt})
		return agenttest.Reply{Calls: []agenttest.Call{{Name: tool, Args: string(args)}}}
	}
	switch {
	case strings.HasPrefix(last, "ECHO "):
		return agenttest.Reply{Text: strings.TrimPrefix(last, "ECHO ")}
	case last == "HANG":
		return agenttest.Reply{Hang: true}
	case last == "ERR":
		return agenttest.Reply{Finish: "error"}
	case last == "MAXTOK":
		return agenttest.Reply{Text: "cut", Finish: "max-tokens"}
	case last == "QUIET":
		return agenttest.Reply{}
	case last == "RECALL":
		first := ""
		for _, m := range req.Messages {
			if m.Role == "user" && len(m.Content) > 0 && first == "" {
				first = m.Content[0].Text
			}
		}
		return agenttest.Reply{Text: "first: " + first}
	}
	return agenttest.Reply{Text: "OK"}
}

func tools(capabilities.Env) []capabilities.Tool {
	return []capabilities.Tool{subagent.Tool{}, subagent.Tool{Fork: true}}
}

// toolResult returns the text and error flag of the log's last tool/result.
func toolResult(t *testing.T, log *session.Log) (string, bool) {
	t.Helper()
	events := log.Events()
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == session.TypeToolResult {
			var r session.ToolResult
			require.NoError(t, events[i].Decode(&r))
			return r.Content[0].Text, r.IsError
		}
	}
	t.Fatal("no tool/result")
	return "", false
}

// childLog loads a stored child log.
func childLog(t *testing.T, env *agenttest.Env, id string) (session.Header, []session.Event) {
	t.Helper()
	h, events, err := env.Store.Load(context.Background(), id)
	require.NoError(t, err)
	return h, events
}

func TestSpawnRunsAFullChildWithItsOwnLog(t *testing.T) {
	env := agenttest.New(t, model, tools)
	parent := env.Session(t)
	end := parent.Prompt(context.Background(), "DELEGATE subagent ECHO CHILD_OK")
	require.Equal(t, session.EndCompleted, end.Kind)
	text, isErr := toolResult(t, parent.Log())
	assert.False(t, isErr)
	assert.Equal(t, "CHILD_OK", text)

	kids := env.Children(t, parent.ID())
	require.Len(t, kids, 1)
	h, events := childLog(t, env, kids[0].ID)
	assert.Equal(t, parent.Cwd(), h.Cwd)
	assert.Zero(t, h.SeedLength, "a spawn has no seed")
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	assert.Equal(t, []string{"turn/start", "user/message", "step/start", "request/header", "assistant/chunk", "assistant/chunk",
		"assistant/chunk", "assistant/chunk", "assistant/message", "step/end", "turn/end"}, types)
	// The child's first header is its parent's: same prompt assembly, same tools.
	assert.JSONEq(t, string(firstHeader(t, parent.Log().Events())), string(firstHeader(t, events)))
	assert.Contains(t, string(events[3].Data), `"reason":"initial"`)

	// Children are not conversations of their own in the editor's history.
	list, err := env.Runtime.ListSessions(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, parent.ID(), list[0].ID)
}

func firstHeader(t *testing.T, events []session.Event) json.RawMessage {
	t.Helper()
	for _, e := range events {
		if e.Type == session.TypeRequestHeader {
			var d struct {
				Header json.RawMessage `json:"header"`
			}
			require.NoError(t, json.Unmarshal(e.Data, &d))
			return d.Header
		}
	}
	t.Fatal("no request/header")
	return nil
}

func TestForkSeedsTheCompletedTurns(t *testing.T) {
	env := agenttest.New(t, model, tools)
	parent := env.Session(t)
	require.Equal(t, session.EndCompleted, parent.Prompt(context.Background(), "remember MARMALADE").Kind)
	seedLen := parent.Log().NextSeq()
	require.Equal(t, session.EndCompleted, parent.Prompt(context.Background(), "DELEGATE subagent_fork RECALL").Kind)
	text, _ := toolResult(t, parent.Log())
	assert.Equal(t, "first: remember MARMALADE", text, "the fork child saw the parent's first turn")

	kids := env.Children(t, parent.ID())
	require.Len(t, kids, 1)
	h, events := childLog(t, env, kids[0].ID)
	assert.Equal(t, seedLen, h.SeedLength)
	assert.Equal(t, parent.ID(), h.ParentSession)
	pe, err := parent.Log().All(context.Background()) // streamed chunks included
	require.NoError(t, err)
	for i := 0; i < seedLen; i++ {
		assert.Equal(t, pe[i].Seq, events[i].Seq)
		assert.Equal(t, pe[i].Time, events[i].Time, "copied verbatim")
		assert.Equal(t, string(pe[i].Data), string(events[i].Data))
	}
	var ts session.TurnStart
	require.NoError(t, events[seedLen].Decode(&ts))
	assert.Equal(t, 2, ts.Turn, "the fork continues the parent's turn numbering")
	hdr := events[seedLen+3]
	require.Equal(t, session.TypeRequestHeader, hdr.Type)
	assert.Contains(t, string(hdr.Data), `"reason":"resume"`)
}

func TestForkWithoutACompletedTurnHasNoSeed(t *testing.T) {
	env := agenttest.New(t, model, tools)
	parent := env.Session(t)
	require.Equal(t, session.EndCompleted, parent.Prompt(context.Background(), "DELEGATE subagent_fork ECHO alone").Kind)
	text, isErr := toolResult(t, parent.Log())
	assert.False(t, isErr)
	assert.Equal(t, "alone", text)
	kids := env.Children(t, parent.ID())
	require.Len(t, kids, 1)
	assert.Zero(t, kids[0].SeedLength)
}

func TestChildFailuresBecomeToolErrors(t *testing.T) {
	for prompt, want := range map[string]string{
		"ERR":    "Error: " + subagent.ErrFailed,
		"MAXTOK": "Error: " + subagent.ErrTokenLimit,
		"QUIET":  "Error: " + subagent.ErrDeclined,
	} {
		t.Run(prompt, func(t *testing.T) {
			env := agenttest.New(t, model, tools)
			parent := env.Session(t)
			require.Equal(t, session.EndCompleted, parent.Prompt(context.Background(), "DELEGATE subagent "+prompt).Kind)
			text, isErr := toolResult(t, parent.Log())
			assert.True(t, isErr)
			assert.Equal(t, want, text)
			require.Len(t, env.Children(t, parent.ID()), 1, "the failed child's log is written")
		})
	}
}

func TestCancellingTheParentCancelsAHangingChild(t *testing.T) {
	env := agenttest.New(t, model, tools)
	parent := env.Session(t)
	done := make(chan session.EndReason)
	go func() { done <- parent.Prompt(context.Background(), "DELEGATE subagent HANG") }()
	require.Eventually(t, func() bool { return len(env.Children(t, parent.ID())) == 1 || env.Provider.Calls() >= 2 },
		5*time.Second, 5*time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	parent.Cancel("user cancelled")
	select {
	case end := <-done:
		assert.Equal(t, session.EndAborted, end.Kind)
	case <-time.After(5 * time.Second):
		t.Fatal("the parent's turn did not end after the cancel")
	}
	text, isErr := toolResult(t, parent.Log())
	assert.True(t, isErr)
	assert.Equal(t, "Error: "+subagent.ErrCancelled, text)
	kids := env.Children(t, parent.ID())
	require.Len(t, kids, 1)
	_, events := childLog(t, env, kids[0].ID)
	var te session.TurnEnd
	require.NoError(t, events[len(events)-1].Decode(&te))
	assert.Equal(t, session.EndReason{Kind: session.EndAborted, Reason: subagent.ReasonParentAborted}, te.Reason)
}

func TestToolWithoutACallingAgent(t *testing.T) {
	reg := capabilities.NewRegistry(subagent.Tool{})
	out := reg.Execute(context.Background(), nil, "c1", "subagent", `{"description":"d","prompt":"p"}`)
	require.True(t, out.IsError)
	assert.Equal(t, "Error: "+subagent.ErrNoAgent, out.Content[0].Text)
}

func TestManySequentialChildrenEachWriteTheirLog(t *testing.T) {
	env := agenttest.New(t, model, tools)
	parent := env.Session(t)
	for i := range 5 {
		out, err := subagent.Run(context.Background(), parent, subagent.Request{Prompt: fmt.Sprintf("ECHO %d", i)})
		require.NoError(t, err)
		assert.Equal(t, subagent.StopCompleted, out.Stop)
		assert.Equal(t, fmt.Sprint(i), out.Text)
	}
	assert.Len(t, env.Children(t, parent.ID()), 5)
}

type echoTool struct{}

func (echoTool) Name() string        { return "echo" }
func (echoTool) Description() string { return "echo" }
func (echoTool) Schema() *capabilities.Schema {
	return capabilities.Object(capabilities.Opt("path", capabilities.String("p")))
}
func (echoTool) Traits() capabilities.Traits { return capabilities.Traits{} }
func (echoTool) Run(context.Context, *capabilities.Call) (capabilities.Result, error) {
	return capabilities.TextResult("echoed"), nil
}

func TestCardShowsTheChildsProgressInTheParentsLog(t *testing.T) {
	card := &subagent.Card{}
	m := func(req *llm.Request) agenttest.Reply {
		if agenttest.LastUser(req) == "USE echo" {
			if agenttest.LastIsToolResult(req) {
				return agenttest.Reply{Text: "finished: " + strings.Repeat("x", 500)}
			}
			return agenttest.Reply{Text: "looking", Calls: []agenttest.Call{{Name: "echo", Args: `{"path":"a.txt"}`}}}
		}
		return model(req)
	}
	env := agenttest.New(t, m, func(capabilities.Env) []capabilities.Tool {
		return []capabilities.Tool{subagent.Tool{Progress: card}, echoTool{}}
	})
	parent := env.Session(t)
	require.Equal(t, session.EndCompleted, parent.Prompt(context.Background(), "DELEGATE subagent USE echo").Kind)
	var shown []string
	var callID string
	for _, e := range parent.Log().Events() {
		switch e.Type {
		case session.TypeToolCall:
			var tc session.ToolCall
			require.NoError(t, e.Decode(&tc))
			callID = tc.CallID
		case session.TypeToolProgress:
			var p session.ToolProgress
			require.NoError(t, e.Decode(&p))
			assert.Equal(t, callID, p.CallID)
			assert.Equal(t, 1, p.Turn)
			assert.Equal(t, 1, p.Step)
			shown = append(shown, p.Content[0].Text)
		}
	}
	require.GreaterOrEqual(t, len(shown), 3, "%q", shown)
	assert.Equal(t, "looking", shown[0])
	assert.Equal(t, "⋯ echo: a.txt\n\nlooking", shown[1])
	assert.Equal(t, "✓ echo: a.txt\n\nlooking", shown[2])
	last := shown[len(shown)-1]
	assert.True(t, strings.HasPrefix(last, "✓ echo: a.txt\n\n…"), last)
	assert.Len(t, []rune(last), len([]rune("✓ echo: a.txt\n\n…"))+400, "the answer's tail is cut")
	text, _ := toolResult(t, parent.Log())
	assert.True(t, strings.HasPrefix(text, "finished: "))
}

func TestBackgroundChildIsATask(t *testing.T) {
	settled := make(chan bash.TaskInfo, 4)
	tasks := bash.NewTasks(func(info bash.TaskInfo) { settled <- info })
	env := agenttest.New(t, model, func(capabilities.Env) []capabilities.Tool {
		return []capabilities.Tool{subagent.Tool{Tasks: tasks}}
	})
	parent := env.Session(t)
	reg := capabilities.NewRegistry(subagent.Tool{Tasks: tasks})
	out := reg.Execute(context.Background(), parent, "c1", "subagent", `{"description":"echo it","prompt":"ECHO from the background","run_in_background":true}`)
	require.False(t, out.IsError, out.Content[0].Text)
	assert.True(t, strings.HasPrefix(out.Content[0].Text, "started background task subagent-1 (subagent)."), out.Content[0].Text)
	select {
	case info := <-settled:
		assert.Equal(t, "subagent-1", info.ID)
		assert.Equal(t, "echo it", info.Label)
		assert.Equal(t, bash.StateCompleted, info.Status.State)
	case <-time.After(5 * time.Second):
		t.Fatal("the background child did not settle")
	}
	text, err := tasks.Output(parent.ID(), "subagent-1")
	require.NoError(t, err)
	assert.Contains(t, text, "from the background")
	assert.Contains(t, text, "[status: completed]")
	_, err = tasks.Output("another-session", "subagent-1")
	assert.Error(t, err, "a task is fenced by its owner")

	out = reg.Execute(context.Background(), parent, "c2", "subagent", `{"description":"hang","prompt":"HANG","run_in_background":true}`)
	require.False(t, out.IsError)
	require.Eventually(t, func() bool { return len(env.Children(t, parent.ID())) == 2 }, 5*time.Second, 5*time.Millisecond)
	_, err = tasks.Kill(context.Background(), parent.ID(), "subagent-2")
	require.NoError(t, err)
	info := <-settled
	assert.Equal(t, bash.StateKilled, info.Status.State)
	kids := env.Children(t, parent.ID())
	require.Eventually(t, func() bool {
		for _, k := range kids {
			_, events, err := env.Store.Load(context.Background(), k.ID)
			if err == nil && len(events) > 0 && events[len(events)-1].Type == session.TypeTurnEnd && strings.Contains(string(events[len(events)-1].Data), "background subagent killed") {
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond, "the killed child's turn ends aborted")
}

func TestDepthLimit(t *testing.T) {
	m := func(req *llm.Request) agenttest.Reply {
		if agenttest.LastIsToolResult(req) {
			return agenttest.Reply{Text: "up"}
		}
		// Every agent delegates again.
		return agenttest.Reply{Calls: []agenttest.Call{{Name: "subagent", Args: `{"description":"deeper","prompt":"go deeper"}`}}}
	}
	env := agenttest.NewWith(t, m, tools, func(c *agent.Config) { c.MaxChildDepth = 2 })
	parent := env.Session(t)
	require.Equal(t, session.EndCompleted, parent.Prompt(context.Background(), "go deeper").Kind)
	hs, err := env.Store.List(context.Background())
	require.NoError(t, err)
	assert.Len(t, hs, 3, "the session, its child and its grandchild")
	var deepest session.Header
	for _, h := range hs {
		if h.ParentSession != "" && h.ParentSession != parent.ID() {
			deepest = h
		}
	}
	require.NotEmpty(t, deepest.ID)
	_, events, err := env.Store.Load(context.Background(), deepest.ID)
	require.NoError(t, err)
	text, isErr := toolResult(t, session.ResumeLog(deepest, events, nil, nil))
	assert.True(t, isErr)
	assert.Equal(t, "Error: subagent depth limit reached: this agent is 2 levels below the session (the limit) and cannot start another child; do the work itself", text)
}
