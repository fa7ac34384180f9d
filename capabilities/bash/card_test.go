package bash

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/shared"
	"github.com/dsh-acp/dsh-acp/session"
)

func ptr[T any](v T) *T { return &v }

// recorded is one scenario's bash call, its result and its two cards.
type recorded struct {
	args   string
	result session.ToolResult
	call   map[string]any // tool_call update
	update map[string]any // tool_call_update
}

func loadRecorded(t *testing.T, scenario string) recorded {
	t.Helper()
	dir := filepath.Join(shared.Dir(t, shared.Upstream), "acp-agent", scenario)
	var r recorded
	eachLine(t, filepath.Join(dir, "session.jsonl"), func(line []byte) {
		var ev struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal(line, &ev))
		switch ev.Type {
		case "tool/call":
			var c struct{ Arguments string }
			require.NoError(t, json.Unmarshal(ev.Data, &c))
			r.args = c.Arguments
		case "tool/result":
			require.NoError(t, json.Unmarshal(ev.Data, &r.result))
		}
	})
	eachLine(t, filepath.Join(dir, "stdout.golden.jsonl"), func(line []byte) {
		var m struct {
			Params struct {
				Update map[string]any `json:"update"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal(line, &m))
		switch m.Params.Update["sessionUpdate"] {
		case "tool_call":
			r.call = m.Params.Update
		case "tool_call_update":
			r.update = m.Params.Update
		}
	})
	require.NotEmpty(t, r.args)
	require.NotNil(t, r.call)
	require.NotNil(t, r.update)
	return r
}

func eachLine(t *testing.T, path string, fn func([]byte)) {
	t.Helper()
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	require.NoError(t, sc.Err())
}

func TestRecordedCards(t *testing.T) {
	tool := NewTool(Options{})
	for _, scenario := range []string{"tool-call-turn", "fs-terminal-card"} {
		t.Run(scenario, func(t *testing.T) {
			r := loadRecorded(t, scenario)
			args := capabilities.ParseArgs(r.args)
			require.Empty(t, tool.Schema().Validate(args))

			cv := tool.PresentCall(args)
			require.Equal(t, capabilities.ViewTerminal, cv.Kind)
			require.Equal(t, r.call["title"], cv.Title)
			require.Equal(t, r.call["kind"], fmt.Sprint(cv.ToolKind)) // a string, or a typed one
			var raw any
			require.NoError(t, json.Unmarshal(cv.RawInput, &raw))
			require.Equal(t, r.call["rawInput"], raw)
			require.Equal(t, cv.Title, cv.Command)
			first := r.call["content"].([]any)[0].(map[string]any)["content"].(map[string]any)["text"]
			require.Equal(t, first, cv.Description)
			require.Empty(t, cv.Cwd)

			rv := tool.PresentResult(args, r.result)
			require.Equal(t, capabilities.ViewTerminal, rv.Kind)
			require.NotNil(t, rv.Output)
			require.NotNil(t, rv.ExitCode)
			require.Equal(t, 0, *rv.ExitCode)
			require.Empty(t, rv.Signal)
			if meta, ok := r.update["_meta"].(map[string]any); ok { // terminal flag on
				require.Equal(t, meta["terminal_output"].(map[string]any)["data"], *rv.Output)
				require.EqualValues(t, meta["terminal_exit"].(map[string]any)["exit_code"], *rv.ExitCode)
			} else { // the bridge fences the output
				fenced := "```console\n" + trimNL(*rv.Output) + "\n```"
				got := r.update["content"].([]any)[0].(map[string]any)["content"].(map[string]any)["text"]
				require.Equal(t, got, fenced)
			}

			// Re-running the recorded command reproduces the recorded result.
			f := newFixture(t, nil)
			o := f.reg.Execute(context.Background(), f.env, "c", "bash", r.args)
			require.Equal(t, r.result.Content, o.Content)
			require.Equal(t, r.result.IsError, o.IsError)
		})
	}
}

func trimNL(s string) string {
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	return s
}

func TestCallViews(t *testing.T) {
	tool := NewTool(Options{})
	cv := tool.PresentCall(json.RawMessage(`{"command":"ls -la","description":"List","workdir":"sub"}`))
	require.Equal(t, capabilities.CallView{
		Kind: capabilities.ViewTerminal, Title: "ls -la", ToolKind: "execute", RawInput: json.RawMessage(`"ls -la"`),
		Command: "ls -la", Description: "List", Cwd: "sub",
	}, cv)

	cv = tool.PresentCall(json.RawMessage(`{"command":"npm run dev","description":"Start the dev server","run_in_background":true}`))
	require.Equal(t, capabilities.CallView{
		Kind: capabilities.ViewGeneric, Title: "npm run dev", ToolKind: "execute", RawInput: json.RawMessage(`"npm run dev"`),
		Content: []string{"Start the dev server"},
	}, cv)

	tasks := NewTasks(nil)
	tools := TaskTools(tasks)
	require.Equal(t, capabilities.CallView{Kind: capabilities.ViewGeneric, Title: "Read output from background task bash-1", ToolKind: "execute", RawInput: json.RawMessage(`"bash-1"`)},
		tools[0].(capabilities.CallPresenter).PresentCall(json.RawMessage(`{"task_id":"bash-1"}`)))
	require.Equal(t, capabilities.CallView{Kind: capabilities.ViewGeneric, Title: "List background tasks", ToolKind: "execute", RawInput: json.RawMessage(`{}`)},
		tools[1].(capabilities.CallPresenter).PresentCall(json.RawMessage(`{}`)))
	require.Equal(t, capabilities.CallView{Kind: capabilities.ViewGeneric, Title: "Kill background task bash-2", ToolKind: "execute", RawInput: json.RawMessage(`"bash-2"`)},
		tools[2].(capabilities.CallPresenter).PresentCall(json.RawMessage(`{"task_id":"bash-2"}`)))
	for _, tl := range tools {
		_, ok := tl.(capabilities.ResultPresenter)
		require.False(t, ok, "%s results are raw", tl.Name())
	}
}

func TestResultViews(t *testing.T) {
	tool := NewTool(Options{})
	fg := json.RawMessage(`{"command":"x","description":"d"}`)
	bg := json.RawMessage(`{"command":"x","description":"d","run_in_background":true}`)
	res := func(isErr bool, blocks ...session.Block) session.ToolResult {
		return session.ToolResult{Content: blocks, IsError: isErr}
	}
	txt := session.TextBlock

	cases := []struct {
		name string
		args json.RawMessage
		r    session.ToolResult
		want capabilities.ResultView
	}{
		{"ok", fg, res(false, txt("SNAPSHOT_OK\n")), capabilities.ResultView{Kind: capabilities.ViewTerminal, Output: ptr("SNAPSHOT_OK\n"), ExitCode: ptr(0), Display: ptr("SNAPSHOT_OK\n")}},
		{"exit", fg, res(false, txt("[stderr]\nboom\n[exit code: 1]")), capabilities.ResultView{Kind: capabilities.ViewTerminal, Output: ptr("[stderr]\nboom\n[exit code: 1]"), ExitCode: ptr(1),
			Display: ptr("boom\n"), Failed: true, Notes: []string{"Exited with code 1."}}},
		{"signal", fg, res(false, txt("(no output)\n[timed out after 200ms]\n[killed by signal: SIGTERM]")), capabilities.ResultView{Kind: capabilities.ViewTerminal, Output: ptr("(no output)\n[timed out after 200ms]\n[killed by signal: SIGTERM]"), Signal: "SIGTERM",
			Display: ptr(""), Failed: true, Notes: []string{"Stopped: timed out after 200ms.", "Killed by signal SIGTERM."}}},
		{"marker not final", fg, res(false, txt("x\n[exit code: 2]\nmore")), capabilities.ResultView{Kind: capabilities.ViewTerminal, Output: ptr("x\n[exit code: 2]\nmore"), ExitCode: ptr(0), Display: ptr("x\n[exit code: 2]\nmore\n")}},
		{"marker without newline", fg, res(false, txt("[exit code: 2]")), capabilities.ResultView{Kind: capabilities.ViewTerminal, Output: ptr("[exit code: 2]"), ExitCode: ptr(0), Display: ptr("[exit code: 2]\n")}},
		{"error", fg, res(true, txt("Error: bash is disabled by policy in this session")), capabilities.ResultView{Kind: capabilities.ViewGeneric, Content: []session.Block{txt("```console\nError: bash is disabled by policy in this session\n```")}}},
		{"background", bg, res(false, txt("started background task bash-1\n\n")), capabilities.ResultView{Kind: capabilities.ViewGeneric, Content: []session.Block{txt("```console\nstarted background task bash-1\n```")}}},
		{"stdout, stderr and the sandbox", fg, res(false, txt("out\n[stderr]\ndenied\n[sandbox: file access denied under read-only mode]\n"+EscalationMarker+"\n[exit code: 1]")),
			capabilities.ResultView{Kind: capabilities.ViewTerminal, Output: ptr("out\n[stderr]\ndenied\n[sandbox: file access denied under read-only mode]\n" + EscalationMarker + "\n[exit code: 1]"), ExitCode: ptr(1),
				Display: ptr("out\ndenied\n"), Failed: true, Notes: []string{"The sandbox denied file access (read-only).", "Exited with code 1."}}},
		{"two blocks", fg, res(false, txt("a"), txt("b")), capabilities.ResultView{Kind: capabilities.ViewGeneric}},
		{"no blocks", fg, res(true), capabilities.ResultView{Kind: capabilities.ViewGeneric}},
		{"non-text", fg, res(false, session.Block{Type: "image"}), capabilities.ResultView{Kind: capabilities.ViewGeneric}},
	}
	for _, c := range cases {
		require.Equal(t, c.want, tool.PresentResult(c.args, c.r), c.name)
	}
}

func TestSchemaAndSection(t *testing.T) {
	plain, err := json.Marshal(NewTool(Options{}).Schema())
	require.NoError(t, err)
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	require.NoError(t, json.Unmarshal(plain, &s))
	require.Equal(t, []string{"command", "description"}, s.Required)
	require.Equal(t, []string{"command", "description", "timeoutMs", "workdir", "run_in_background"}, keys(t, s.Properties))

	conf, err := json.Marshal(NewTool(Options{Sandbox: &Sandboxing{}}).Schema())
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(conf, &s))
	require.Equal(t, []string{"command", "description", "timeoutMs", "workdir", "run_in_background", "sandbox_permissions", "justification"}, keys(t, s.Properties))
	require.Contains(t, string(conf), `"sandbox_permissions":{"type":"string","description":`)
	require.Contains(t, string(conf), `"enum":["workspace-write","danger-full-access"]}`)

	tools := New(Options{})
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name())
	}
	require.Equal(t, []string{"bash", "task_output", "task_list", "task_kill"}, names)
	b, err := json.Marshal(tools[1].Schema())
	require.NoError(t, err)
	require.Regexp(t, `^\{"type":"object","properties":\{"task_id":\{"type":"string","description":"[^"]+"\}\},"required":\["task_id"\]\}$`, string(b))
	b, err = json.Marshal(tools[2].Schema())
	require.NoError(t, err)
	require.Equal(t, `{"type":"object","properties":{}}`, string(b))

	sec := tools[0].(capabilities.Sectioner).PromptSection()
	require.Equal(t, "tool:bash", sec.Name)
	require.Equal(t, 105, sec.Order)
	require.Contains(t, sec.Text, "[exit code: N]")
}

// keys lists a JSON object's keys in order.
func keys(t *testing.T, obj json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	var out []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		out = append(out, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return out
}
