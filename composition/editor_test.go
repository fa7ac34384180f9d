package composition_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.Equal(t, []string{`{"sessionUpdate":"current_mode_update","currentModeId":"plan"}`}, updates(before, sid.SessionID))

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
