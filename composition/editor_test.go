package composition_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/composition"
)

// specOption is a session config option as a spec-following client reads
// it (ACP SessionConfigOption, select type).
type specOption struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Category     string `json:"category"`
	Type         string `json:"type"`
	CurrentValue string `json:"currentValue"`
	Options      []struct {
		Value       string `json:"value"`
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"options"`
}

// specOptions decodes the configOptions of a result or an update, and
// nothing else: a client that has configOptions ignores modes.
func specOptions(t *testing.T, raw string) []specOption {
	t.Helper()
	var v struct {
		ConfigOptions []specOption `json:"configOptions"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &v), raw)
	return v.ConfigOptions
}

// byCategory returns the one option of a category.
func byCategory(t *testing.T, opts []specOption, category string) specOption {
	t.Helper()
	var found []specOption
	for _, o := range opts {
		if o.Category == category {
			found = append(found, o)
		}
	}
	require.Len(t, found, 1, "options of category %q in %+v", category, opts)
	return found[0]
}

// optionUpdates returns the config_option_update payloads among lines.
func optionUpdates(lines []string, sid string) []string {
	var out []string
	for _, u := range updates(lines, sid) {
		if strings.Contains(u, `"sessionUpdate":"config_option_update"`) {
			out = append(out, u)
		}
	}
	return out
}

func current(t *testing.T, opts []specOption, category string) string {
	t.Helper()
	return byCategory(t, opts, category).CurrentValue
}

// A client that follows the spec uses configOptions instead of modes when
// both are sent: it must find the plan picker there (category mode, once),
// every option and value named for people and described, and it must be
// able to switch plan mode with set_config_option alone; every change the
// client did not make (a legacy set_mode, an approved plan) arrives as
// config_option_update.
func TestSpecClientSeesEveryPicker(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	answer := func(method string, _ json.RawMessage) any {
		if method == "session/request_permission" {
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "choice-0"}}
		}
		return nil
	}
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, answer)
	var init struct {
		Result struct {
			AgentInfo struct{ Name, Title string } `json:"agentInfo"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(srv.c.snapshot()[0]), &init))
	assert.Equal(t, "dsh-acp", init.Result.AgentInfo.Name)
	assert.NotEmpty(t, init.Result.AgentInfo.Title)

	resp, _ := srv.c.roundtrip("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})
	var nr struct {
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp), &nr))
	var sid struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(nr.Result, &sid))
	opts := specOptions(t, string(nr.Result))

	mode := byCategory(t, opts, "mode")
	assert.Equal(t, "default", mode.CurrentValue)
	var values []string
	for _, v := range mode.Options {
		values = append(values, v.Value)
	}
	assert.Equal(t, []string{"default", "plan"}, values)
	for _, o := range opts {
		assert.NotEmpty(t, o.Description, o.ID)
		assert.Equal(t, "select", o.Type)
		if o.Category != "mode" && o.Category != "model" && o.Category != "thought_level" {
			assert.True(t, strings.HasPrefix(o.Category, "_"), "%s: category %q is neither the spec's nor custom", o.ID, o.Category)
		}
		for _, v := range o.Options {
			assert.NotEqual(t, v.Value, v.Name, "%s: value %s has no human name", o.ID, v.Value)
			assert.NotEmpty(t, v.Description, "%s: value %s", o.ID, v.Value)
		}
	}
	assert.Equal(t, "workspace-write", current(t, opts, "_sandbox"))
	assert.Equal(t, "ask", current(t, opts, "_approvals"))

	// Plan mode through the config option alone: the answer shows it, and
	// the legacy picker is kept in step.
	resp, before := srv.c.roundtrip("session/set_config_option", map[string]any{"sessionId": sid.SessionID, "configId": mode.ID, "value": "plan"})
	require.NoError(t, json.Unmarshal([]byte(resp), &nr))
	assert.Equal(t, "plan", current(t, specOptions(t, string(nr.Result)), "mode"))
	assert.Equal(t, []string{`{"sessionUpdate":"current_mode_update","currentModeId":"plan"}`}, changeUpdates(before, sid.SessionID))

	// The mode governs the next turn: plan mode offers no write tools.
	p.script("present the plan", exitPlan())
	stop, lines := srv.prompt(t, sid.SessionID, "present the plan")
	require.Equal(t, "end_turn", stop)
	reqs := p.requestsFor(sid.SessionID)
	require.NotEmpty(t, reqs)
	assert.NotContains(t, toolNames(reqs[0]), "write")
	assert.Contains(t, toolNames(reqs[0]), "exit_plan_mode")

	// The approved plan left plan mode: announced as an option change.
	ups := optionUpdates(lines, sid.SessionID)
	require.Len(t, ups, 1, "updates: %v", updates(lines, sid.SessionID))
	assert.Equal(t, "default", current(t, specOptions(t, ups[0]), "mode"))
	assert.Equal(t, "workspace-write", current(t, specOptions(t, ups[0]), "_sandbox"))

	// A legacy set_mode is announced to the options picker too.
	_, before = srv.c.roundtrip("session/set_mode", map[string]any{"sessionId": sid.SessionID, "modeId": "plan"})
	ups = optionUpdates(before, sid.SessionID)
	require.Len(t, ups, 1)
	assert.Equal(t, "plan", current(t, specOptions(t, ups[0]), "mode"))

	// Unknown values are refused, the boolean form too.
	l, _ := srv.c.roundtrip("session/set_config_option", map[string]any{"sessionId": sid.SessionID, "configId": "mode", "value": "yolo"})
	assert.Contains(t, l, `unknown mode \"yolo\" — available modes: default, plan`)
	l, _ = srv.c.roundtrip("session/set_config_option", map[string]any{"sessionId": sid.SessionID, "configId": "mode", "value": true})
	assert.Contains(t, l, `config option mode is a select; boolean values are not accepted`)

	// A reload restores every value.
	srv.stop()
	srv2 := serve(t, "default", openStore(t, root), ws, newProvider(), map[string]any{}, nil)
	resp, _ = srv2.c.roundtrip("session/load", map[string]any{"sessionId": sid.SessionID, "cwd": ws, "mcpServers": []any{}})
	require.NoError(t, json.Unmarshal([]byte(resp), &nr))
	assert.Equal(t, "plan", current(t, specOptions(t, string(nr.Result)), "mode"))
}

// defaultModel is the model of the built-in compositions.
const defaultModel = composition.DefaultModel

// The Model menu lists the provider's models (GET /models, fetched once
// for every session), and the Thinking menu is there for a model that
// takes the switch; both change what the next request names, survive a
// reload, and a configured model list replaces the provider's.
func TestSpecClientSwitchesModelAndThinking(t *testing.T) {
	var hits atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/models" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"deepseek-v4-flash","object":"model"},{"id":"deepseek-v4-pro","object":"model"}]}`))
	}))
	defer api.Close()

	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	lister := func(so *composition.ServerOptions) {
		so.ListModels = composition.HTTPModelLister(api.URL, "sk-test", api.Client())
	}
	srv := serveWith(t, "default", openStore(t, root), ws, p, map[string]any{}, nil, lister)
	newOpts := func(srv *server) (string, []specOption) {
		resp, _ := srv.c.roundtrip("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})
		var f struct {
			Result struct {
				SessionID string `json:"sessionId"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(resp), &f))
		var r struct{ Result json.RawMessage }
		require.NoError(t, json.Unmarshal([]byte(resp), &r))
		return f.Result.SessionID, specOptions(t, string(r.Result))
	}
	sid, opts := newOpts(srv)
	model := byCategory(t, opts, "model")
	assert.Equal(t, defaultModel, model.CurrentValue)
	var ids, names []string
	for _, v := range model.Options {
		ids, names = append(ids, v.Value), append(names, v.Name)
	}
	assert.Equal(t, []string{"deepseek-v4-flash", "deepseek-v4-pro"}, ids)
	assert.Equal(t, []string{"DeepSeek V4 Flash", "DeepSeek V4 Pro"}, names)
	assert.Equal(t, "enabled", current(t, opts, "thought_level"))
	newOpts(srv)
	assert.Equal(t, int32(1), hits.Load(), "the provider's list is fetched once")

	set := func(id, value string) []specOption {
		resp, _ := srv.c.roundtrip("session/set_config_option", map[string]any{"sessionId": sid, "configId": id, "value": value})
		var r struct {
			Result json.RawMessage
			Error  json.RawMessage
		}
		require.NoError(t, json.Unmarshal([]byte(resp), &r))
		require.Empty(t, string(r.Error), resp)
		return specOptions(t, string(r.Result))
	}
	opts = set(model.ID, "deepseek-v4-pro")
	assert.Equal(t, "deepseek-v4-pro", current(t, opts, "model"))
	opts = set(byCategory(t, opts, "thought_level").ID, "disabled")
	assert.Equal(t, "disabled", current(t, opts, "thought_level"))
	l, _ := srv.c.roundtrip("session/set_config_option", map[string]any{"sessionId": sid, "configId": model.ID, "value": "gpt-9"})
	assert.Contains(t, l, `unknown model \"gpt-9\"`)

	stop, _ := srv.prompt(t, sid, "hello")
	require.Equal(t, "end_turn", stop)
	reqs := p.requestsFor(sid)
	require.Len(t, reqs, 1)
	assert.Equal(t, "deepseek-v4-pro", reqs[0].Config.Model)
	assert.Equal(t, "disabled", reqs[0].Config.Thinking)
	assert.Contains(t, reqs[0].System, "deepseek-v4-pro")
	evs := readLog(t, root, sid)
	assert.Equal(t, []string{`{"model":"deepseek-v4-pro"}`}, ofType(evs, "model/set"))
	assert.Equal(t, []string{`{"thinking":"disabled"}`}, ofType(evs, "model/thinking"))

	srv.stop()
	srv2 := serveWith(t, "default", openStore(t, root), ws, newProvider(), map[string]any{}, nil, lister)
	resp, _ := srv2.c.roundtrip("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}})
	var r struct{ Result json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(resp), &r))
	opts = specOptions(t, string(r.Result))
	assert.Equal(t, "deepseek-v4-pro", current(t, opts, "model"))
	assert.Equal(t, "disabled", current(t, opts, "thought_level"))

	// A configured list wins, and a model without the switch has no
	// Thinking menu.
	before := hits.Load()
	no := false
	srv3 := serveWith(t, "default", openStore(t, t.TempDir()), ws, newProvider(), map[string]any{}, nil, func(so *composition.ServerOptions) {
		lister(so)
		so.Models = []composition.ModelConfig{{ID: defaultModel, Name: "Flash", Description: "Fast.", Thinking: &no}, {ID: "deepseek-v4-pro"}}
	})
	_, opts = newOpts(srv3)
	model = byCategory(t, opts, "model")
	require.Len(t, model.Options, 2)
	assert.Equal(t, "Flash", model.Options[0].Name)
	for _, o := range opts {
		assert.NotEqual(t, "thought_level", o.Category)
	}
	assert.Equal(t, before, hits.Load(), "a configured list is not fetched")
}

// permissionCall is the toolCall of a session/request_permission.
type permissionCall struct {
	ToolCall struct {
		ToolCallID string          `json:"toolCallId"`
		Title      string          `json:"title"`
		Kind       string          `json:"kind"`
		Status     string          `json:"status"`
		RawInput   json.RawMessage `json:"rawInput"`
		Content    []struct {
			Type    string `json:"type"`
			Path    string `json:"path"`
			NewText string `json:"newText"`
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"content"`
	} `json:"toolCall"`
	Options []struct {
		OptionID, Name, Kind string
	} `json:"options"`
}

func (p permissionCall) texts() string {
	var b strings.Builder
	for _, c := range p.ToolCall.Content {
		b.WriteString(c.Content.Text + "\n")
	}
	return b.String()
}

// A permission request shows what the user decides on: the command with
// the requested sandbox and the model's justification, or the diff of a
// write; the card is pending while asked, and "always" says what it
// covers.
func TestPermissionRequestsCanBeJudged(t *testing.T) {
	root, ws, outside := t.TempDir(), t.TempDir(), t.TempDir()
	p := newProvider()
	var asked []permissionCall
	answer := func(method string, params json.RawMessage) any {
		if method != "session/request_permission" {
			return nil
		}
		var pc permissionCall
		require.NoError(t, json.Unmarshal(params, &pc))
		asked = append(asked, pc)
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-once"}}
	}
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, answer)
	sid := srv.newSession(t, ws).SessionID
	cmd := "echo one > " + outside + "/one.txt"
	args, _ := json.Marshal(map[string]any{"command": cmd, "description": "write outside",
		"sandbox_permissions": "danger-full-access", "justification": "the user asked for a file outside the project"})
	p.script("escalate", toolCall{Name: "bash", Args: string(args)})
	stop, lines := srv.prompt(t, sid, "escalate")
	require.Equal(t, "end_turn", stop)
	require.Len(t, asked, 1)
	pc := asked[0]
	assert.Equal(t, cmd, pc.ToolCall.Title)
	assert.Equal(t, "execute", pc.ToolCall.Kind)
	assert.Equal(t, "pending", pc.ToolCall.Status)
	assert.NotEmpty(t, pc.ToolCall.RawInput)
	assert.Contains(t, pc.texts(), "```sh\n"+cmd+"\n```")
	assert.Contains(t, pc.texts(), "Full access")
	assert.Contains(t, pc.texts(), "Why: the user asked for a file outside the project")
	assert.Equal(t, "Always allow, and keep this session at Full access", pc.Options[1].Name)
	// Allowed: the card runs again, then completes.
	var statuses []string
	for _, u := range updates(lines, sid) {
		var v struct{ SessionUpdate, Status string }
		require.NoError(t, json.Unmarshal([]byte(u), &v))
		if strings.HasPrefix(v.SessionUpdate, "tool_call") {
			statuses = append(statuses, v.Status)
		}
	}
	assert.Equal(t, []string{"in_progress", "pending", "in_progress", "completed"}, statuses)

	// A write in a read-only session shows its diff.
	srv.setConfig(t, sid, "sandbox-mode", "read-only")
	p.script("write", writeCall("note.txt", "hello\n"))
	stop, _ = srv.prompt(t, sid, "write")
	require.Equal(t, "end_turn", stop)
	require.Len(t, asked, 2)
	pc = asked[1]
	assert.Equal(t, "edit", pc.ToolCall.Kind)
	assert.Equal(t, "pending", pc.ToolCall.Status)
	require.NotEmpty(t, pc.ToolCall.Content)
	assert.Equal(t, "diff", pc.ToolCall.Content[0].Type)
	assert.Equal(t, filepath.Join(ws, "note.txt"), pc.ToolCall.Content[0].Path)
	assert.Equal(t, "hello\n", pc.ToolCall.Content[0].NewText)
	assert.Equal(t, "Always allow writes in this session (switches the sandbox to Workspace)", pc.Options[1].Name)
}

// A terminal card shows exactly what the command printed (the model's
// annotations stay in its result), fails on a non-zero exit with the exit
// code visible, and carries the arguments and the raw result.
func TestTerminalCardsShowTheCommandsOutput(t *testing.T) {
	for _, caps := range []map[string]any{{}, {"_meta": map[string]any{"terminal_output": true}}} {
		root, ws := t.TempDir(), t.TempDir()
		p := newProvider()
		srv := serve(t, "default", openStore(t, root), ws, p, caps, nil)
		sid := srv.newSession(t, ws).SessionID
		args, _ := json.Marshal(map[string]any{"command": "echo out; echo err >&2; exit 3", "description": "fail on purpose"})
		p.script("fail", toolCall{Name: "bash", Args: string(args)})
		stop, lines := srv.prompt(t, sid, "fail")
		require.Equal(t, "end_turn", stop)
		res := lastResult(t, root, sid)
		require.Contains(t, res.text(), "[stderr]\nerr\n[exit code: 3]", "the model's result keeps its annotations")

		var call, result map[string]json.RawMessage
		for _, u := range updates(lines, sid) {
			var v map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(u), &v))
			switch string(v["sessionUpdate"]) {
			case `"tool_call"`:
				call = v
			case `"tool_call_update"`:
				result = v
			}
		}
		require.NotNil(t, call)
		require.NotNil(t, result)
		assert.JSONEq(t, string(args), string(call["rawInput"]))
		assert.Equal(t, `"failed"`, string(result["status"]))
		assert.Contains(t, string(result["rawOutput"]), `[exit code: 3]`)
		shown := string(result["content"])
		if meta, ok := result["_meta"]; ok {
			shown += string(meta)
			assert.Contains(t, string(meta), `"data":"out\nerr\n"`)
			assert.Contains(t, string(meta), `"exit_code":3`)
			assert.Contains(t, shown, `{"type":"terminal","terminalId":`)
		} else {
			assert.Contains(t, shown, "```console\\nout\\nerr\\n```")
		}
		assert.Contains(t, shown, "Exited with code 3.")
		assert.NotContains(t, shown, "[stderr]")
		assert.NotContains(t, shown, "[exit code")
	}
}

// The other cards read like the peers': todo_write is the plan alone
// (priorities by status), a question is titled by itself, and the plan
// review is a switch_mode card whose title stays.
func TestOtherCardsForEditors(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	answer := func(method string, _ json.RawMessage) any {
		if method == "session/request_permission" {
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "choice-0"}}
		}
		return nil
	}
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, answer)
	sid := srv.newSession(t, ws).SessionID
	p.script("todos", toolCall{Name: "todo_write", Args: `{"todos":[{"content":"a","status":"completed"},{"content":"b","status":"in_progress"},{"content":"c","status":"pending"}]}`})
	p.script("ask", toolCall{Name: "ask_user_question", Args: `{"questions":[{"id":"q","question":"Which database?","options":[{"label":"Postgres"},{"label":"SQLite"}]}]}`})
	cards := func(prompt string) []map[string]any {
		stop, lines := srv.prompt(t, sid, prompt)
		require.Equal(t, "end_turn", stop)
		var out []map[string]any
		for _, u := range updates(lines, sid) {
			var v map[string]any
			require.NoError(t, json.Unmarshal([]byte(u), &v))
			if k := v["sessionUpdate"]; k == "tool_call" || k == "tool_call_update" || k == "plan" {
				out = append(out, v)
			}
		}
		return out
	}

	us := cards("todos")
	require.Len(t, us, 1, "the plan update alone: %v", us)
	assert.Equal(t, "plan", us[0]["sessionUpdate"])
	var prios []any
	for _, e := range us[0]["entries"].([]any) {
		prios = append(prios, e.(map[string]any)["priority"])
	}
	assert.Equal(t, []any{"low", "high", "medium"}, prios)

	us = cards("ask")
	require.Len(t, us, 2)
	assert.Equal(t, "Which database?", us[0]["title"])

	srv.setMode(t, sid, "plan")
	p.script("present the plan", exitPlan())
	us = cards("present the plan")
	require.Len(t, us, 2)
	assert.Equal(t, "switch_mode", us[0]["kind"])
	assert.Equal(t, "Tidy up", us[0]["title"])
	assert.NotContains(t, us[1], "title", "the title stays")
	assert.Equal(t, "completed", us[1]["status"])
}

// An "always allow" that widens the session's sandbox is announced as an
// option change, so the Sandbox menu shows the new level.
func TestAlwaysAllowWideningIsAnnounced(t *testing.T) {
	root, ws, outside := t.TempDir(), t.TempDir(), t.TempDir()
	p := newProvider()
	answer := func(method string, _ json.RawMessage) any {
		if method == "session/request_permission" {
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-always"}}
		}
		return nil
	}
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, answer)
	sid := srv.newSession(t, ws).SessionID
	args, _ := json.Marshal(map[string]any{"command": "touch " + outside + "/y", "description": "touch outside",
		"sandbox_permissions": "danger-full-access", "justification": "needed"})
	p.script("widen", toolCall{Name: "bash", Args: string(args)})
	stop, lines := srv.prompt(t, sid, "widen")
	require.Equal(t, "end_turn", stop)
	ups := optionUpdates(lines, sid)
	require.Len(t, ups, 1)
	assert.Equal(t, "danger-full-access", current(t, specOptions(t, ups[0]), "_sandbox"))
}
