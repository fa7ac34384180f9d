package composition_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
)

const readOnlyMarker = "[sandbox: file access denied under read-only mode]"

// bashWrite is a bash call writing text to path.
func bashWrite(path, text string) toolCall {
	args, _ := json.Marshal(map[string]string{"command": "printf '" + text + "\\n' > " + path + " && cat " + path,
		"description": "write " + filepath.Base(path)})
	return toolCall{Name: "bash", Args: string(args)}
}

// lastResult returns the most recent tool/result in a session's stored log.
func lastResult(t *testing.T, root, sid string) toolResult {
	t.Helper()
	rs := toolResults(t, readLog(t, root, sid))
	require.NotEmpty(t, rs)
	return rs[len(rs)-1]
}

// updateFor returns the session's tool_call_update line for callID.
func updateFor(lines []string, sid, callID string) string {
	for _, u := range updates(lines, sid) {
		if strings.Contains(u, `"sessionUpdate":"tool_call_update"`) && strings.Contains(u, `"toolCallId":"`+callID+`"`) {
			return u
		}
	}
	return ""
}

// 1. Two sessions of one server, in different sandbox modes, prompting
// concurrently: each bash call runs under its own session's mode.
func TestConcurrentSessionsKeepTheirOwnSandboxMode(t *testing.T) {
	cases := []struct {
		comp         string
		setA, setB   string // sandbox-mode switches ("" = none)
		wantB        string
		bWritesFiles bool
	}{
		// default: workspace-write by default; A is switched to read-only.
		{comp: "default", setA: "read-only", setB: "workspace-write", wantB: "workspace-write"},
		// sandbox-acp-agent: read-only by default; B is switched wider.
		{comp: "sandbox-acp-agent", setA: "read-only", setB: "workspace-write", wantB: "workspace-write"},
		{comp: "sandbox-acp-agent", setA: "read-only", setB: "danger-full-access", wantB: "danger-full-access"},
	}
	for _, tc := range cases {
		t.Run(tc.comp+"/"+tc.wantB, func(t *testing.T) {
			root, ws := t.TempDir(), t.TempDir()
			p := newProvider()
			srv := serve(t, tc.comp, openStore(t, root), ws, p, map[string]any{}, nil)

			a := srv.newSession(t, ws)
			b := srv.newSession(t, ws)
			require.NotEqual(t, a.SessionID, b.SessionID)

			// Responses show each session's own value, whatever the other did.
			want := func(sandbox string) map[string]string {
				m := map[string]string{"sandbox-mode": sandbox, "approval-policy": "ask"}
				if tc.comp == "default" {
					// the mode and the model are options there too
					m["mode"], m["model"], m["thinking"], m["tool-mode"], m["network"] = "default", defaultModel, "enabled", "native", "off"
				}
				return m
			}
			ra := srv.setConfig(t, a.SessionID, "sandbox-mode", tc.setA)
			assert.Equal(t, want("read-only"), ra.values())
			rb := srv.setConfig(t, b.SessionID, "sandbox-mode", tc.setB)
			assert.Equal(t, want(tc.wantB), rb.values())
			ra = srv.setConfig(t, a.SessionID, "sandbox-mode", "read-only") // no-op: reads A back
			assert.Equal(t, want("read-only"), ra.values())

			fileA, fileB := filepath.Join(ws, "a.txt"), filepath.Join(ws, "b.txt")
			p.script("write A", bashWrite(fileA, "from A"))
			p.script("write B", bashWrite(fileB, "from B"))
			bar := p.rendezvous("write A", "write B")

			mark := srv.c.mark()
			_, chA := srv.c.request("session/prompt", promptParams(a.SessionID, "write A"))
			_, chB := srv.c.request("session/prompt", promptParams(b.SessionID, "write B"))
			fa := srv.c.await(chA, "prompt A")
			fb := srv.c.await(chB, "prompt B")
			assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(fa.Result), string(fa.Error))
			assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(fb.Result), string(fb.Error))
			assert.False(t, bar.timedOut(), "the two prompts did not run concurrently")

			// A: denied under read-only, nothing written.
			resA := lastResult(t, root, a.SessionID)
			assert.Contains(t, resA.text(), readOnlyMarker)
			assert.NoFileExists(t, fileA)
			// B: written under its own wider mode.
			resB := lastResult(t, root, b.SessionID)
			assert.NotContains(t, resB.text(), "[sandbox:")
			assert.Equal(t, "from B\n", resB.text())
			data, err := os.ReadFile(fileB)
			require.NoError(t, err, "B's write did not happen")
			assert.Equal(t, "from B\n", string(data))

			// The wire carries each session's own result.
			lines := srv.c.since(mark)
			upA := updateFor(lines, a.SessionID, resA.CallID)
			upB := updateFor(lines, b.SessionID, resB.CallID)
			assert.Contains(t, upA, readOnlyMarker)
			assert.Contains(t, upB, "from B")
			assert.NotContains(t, upB, "[sandbox:")

			// Each held switch is anchored in its own log only.
			logA, logB := readLog(t, root, a.SessionID), readLog(t, root, b.SessionID)
			if tc.comp == "default" {
				assert.Equal(t, []string{`{"mode":"read-only"}`}, ofType(logA, "bash/sandbox-mode"))
				assert.Empty(t, ofType(logB, "bash/sandbox-mode"))
				assert.Equal(t, []string{"turn/start", "bash/sandbox-mode", "user/message"}, types(logA)[:3])
			} else {
				assert.Empty(t, ofType(logA, "bash/sandbox-mode"))
				assert.Equal(t, []string{`{"mode":"` + tc.wantB + `"}`}, ofType(logB, "bash/sandbox-mode"))
				assert.Equal(t, []string{"turn/start", "bash/sandbox-mode", "user/message"}, types(logB)[:3])
			}
		})
	}
}

// 2. A restarted server folds each session's knobs from its own log.
func TestRestartReloadsKnobsFromLog(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	store := openStore(t, root)
	srv := serve(t, "default", store, ws, p, map[string]any{}, nil)
	s1 := srv.newSession(t, ws)
	s2 := srv.newSession(t, ws)
	assert.Equal(t, map[string]string{"mode": "default", "model": defaultModel, "thinking": "enabled", "tool-mode": "native", "network": "off", "sandbox-mode": "workspace-write", "approval-policy": "ask"}, s1.values())

	srv.setConfig(t, s1.SessionID, "sandbox-mode", "read-only")
	r := srv.setConfig(t, s1.SessionID, "approval-policy", "never")
	assert.Equal(t, map[string]string{"mode": "default", "model": defaultModel, "thinking": "enabled", "tool-mode": "native", "network": "off", "sandbox-mode": "read-only", "approval-policy": "never"}, r.values())

	stop, _ := srv.prompt(t, s1.SessionID, "hello one")
	assert.Equal(t, "end_turn", stop)
	stop, _ = srv.prompt(t, s2.SessionID, "hello two")
	assert.Equal(t, "end_turn", stop)
	// A switch held while idle is recorded durably (knob/pending) before it
	// is acknowledged, so a restart keeps it.
	r = srv.setConfig(t, s2.SessionID, "approval-policy", "never")
	assert.Equal(t, map[string]string{"mode": "default", "model": defaultModel, "thinking": "enabled", "tool-mode": "native", "network": "off", "sandbox-mode": "workspace-write", "approval-policy": "never"}, r.values())
	srv.stop()
	require.NoError(t, store.Close())

	log1 := readLog(t, root, s1.SessionID)
	assert.Equal(t, []string{"turn/start", "bash/sandbox-mode", "approval/policy", "user/message"}, types(log1)[:4])
	assert.Equal(t, []string{`{"mode":"read-only"}`}, ofType(log1, "bash/sandbox-mode"))
	assert.Equal(t, []string{`{"policy":"never"}`}, ofType(log1, "approval/policy"))
	log2 := readLog(t, root, s2.SessionID)
	assert.Empty(t, ofType(log2, "bash/sandbox-mode"))
	assert.Empty(t, ofType(log2, "approval/policy"))
	assert.Equal(t, []string{`{"knob":"approval-policy","value":"never"}`}, ofType(log2, agent.TypeKnobPending))

	// A new server on the same store.
	p2 := newProvider()
	srv2 := serve(t, "default", openStore(t, root), ws, p2, map[string]any{}, nil)
	l1 := srv2.loadSession(t, s1.SessionID, ws)
	l2 := srv2.loadSession(t, s2.SessionID, ws)
	assert.Equal(t, map[string]string{"mode": "default", "model": defaultModel, "thinking": "enabled", "tool-mode": "native", "network": "off", "sandbox-mode": "read-only", "approval-policy": "never"}, l1.values())
	assert.Equal(t, map[string]string{"mode": "default", "model": defaultModel, "thinking": "enabled", "tool-mode": "native", "network": "off", "sandbox-mode": "workspace-write", "approval-policy": "never"}, l2.values())

	// The reloaded modes still govern bash.
	f1, f2 := filepath.Join(ws, "one.txt"), filepath.Join(ws, "two.txt")
	p2.script("write one", bashWrite(f1, "one"))
	p2.script("write two", bashWrite(f2, "two"))
	stop, _ = srv2.prompt(t, s1.SessionID, "write one")
	assert.Equal(t, "end_turn", stop)
	stop, _ = srv2.prompt(t, s2.SessionID, "write two")
	assert.Equal(t, "end_turn", stop)
	assert.Contains(t, lastResult(t, root, s1.SessionID).text(), readOnlyMarker)
	assert.NoFileExists(t, f1)
	assert.Equal(t, "two\n", lastResult(t, root, s2.SessionID).text())
	assert.FileExists(t, f2)

	// The reloaded never policy is what the model is told, too.
	reqs := p2.requestsFor(s1.SessionID)
	require.NotEmpty(t, reqs)
	assert.Contains(t, reqs[0].System, "Approval prompts are off in this session")
	reqs = p2.requestsFor(s2.SessionID)
	require.NotEmpty(t, reqs)
	assert.Contains(t, reqs[0].System, "Approval prompts are off in this session", "the restored pending switch was anchored")
	// The model already knew the policy before the restart: no narration.
	for _, m := range ofType(readLog(t, root, s1.SessionID), "context/message") {
		assert.NotContains(t, m, "approval policy changed")
	}
	// Nothing was re-anchored: the logged values were already current.
	log1 = readLog(t, root, s1.SessionID)
	assert.Len(t, ofType(log1, "bash/sandbox-mode"), 1)
	assert.Len(t, ofType(log1, "approval/policy"), 1)
	assert.Equal(t, []string{`{"policy":"never"}`}, ofType(readLog(t, root, s2.SessionID), "approval/policy"))
}

const planDenial = `Error: tool "%s" is not available in plan mode; continue planning and present your plan with exit_plan_mode when ready`

// 3. Plan mode: mutating tools are denied before they run, and the model is
// offered only the plan allowlist.
func TestPlanModeDeniesWritesAndFiltersTools(t *testing.T) {
	for _, comp := range []string{"plan-acp-agent", "default"} {
		t.Run(comp, func(t *testing.T) {
			root, ws := t.TempDir(), t.TempDir()
			p := newProvider()
			srv := serve(t, comp, openStore(t, root), ws, p, map[string]any{}, nil)
			s := srv.newSession(t, ws)
			require.NotNil(t, s.Modes)
			assert.Equal(t, "default", s.Modes.CurrentModeID)

			target := filepath.Join(ws, "new.txt")
			keep := filepath.Join(ws, "keep.txt")
			require.NoError(t, os.WriteFile(keep, []byte("original\n"), 0o644))
			writeArgs, _ := json.Marshal(map[string]string{"file_path": target, "content": "planned\n"})
			editArgs, _ := json.Marshal(map[string]string{"file_path": keep, "old_string": "original", "new_string": "changed"})
			calls := []toolCall{{Name: "write", Args: string(writeArgs)}, {Name: "edit", Args: string(editArgs)}}
			denied := []string{"write", "edit"}
			shellFile := filepath.Join(ws, "shell.txt")
			if comp == "default" {
				// bash is mounted here, and an unregistered name is denied
				// by the gate too (not reported as an unknown tool).
				calls = append(calls, bashWrite(shellFile, "shell"), toolCall{Name: "no_such_tool", Args: `{}`})
				denied = append(denied, "bash", "no_such_tool")
			}
			p.script("make changes", calls...)

			srv.setMode(t, s.SessionID, "plan")
			stop, lines := srv.prompt(t, s.SessionID, "make changes")
			assert.Equal(t, "end_turn", stop)

			// Side effects: nothing written, nothing edited.
			assert.NoFileExists(t, target)
			data, err := os.ReadFile(keep)
			require.NoError(t, err)
			assert.Equal(t, "original\n", string(data))

			evs := readLog(t, root, s.SessionID)
			assert.Equal(t, []string{"turn/start", "mode/set", "user/message"}, types(evs)[:3])
			assert.Equal(t, []string{`{"mode":"plan"}`}, ofType(evs, "mode/set"))
			assert.NoFileExists(t, shellFile)
			rs := toolResults(t, evs)
			require.Len(t, rs, len(denied))
			for i, name := range denied {
				want := strings.Replace(planDenial, "%s", name, 1)
				assert.Equal(t, want, rs[i].text())
				assert.True(t, rs[i].IsError)
				assert.Empty(t, string(rs[i].Error), "a plan-mode denial is a plain error")
				up := updateFor(lines, s.SessionID, rs[i].CallID)
				assert.Contains(t, up, `"status":"failed"`)
				esc, _ := json.Marshal(want)
				assert.Contains(t, up, strings.Trim(string(esc), `"`))
			}
			// No current_mode_update during the turn: the client already knows.
			for _, u := range updates(lines, s.SessionID) {
				assert.NotContains(t, u, "current_mode_update")
			}

			reqs := p.requestsFor(s.SessionID)
			require.Len(t, reqs, 2)
			for _, r := range reqs {
				assert.Equal(t, planTools(comp), toolNames(r))
			}
		})
	}
}

const planText = "# Tidy up\n\n1. Remove the stale file.\n2. Run the tests."

func exitPlan() toolCall {
	args, _ := json.Marshal(map[string]string{"plan": planText})
	return toolCall{Name: "exit_plan_mode", Args: string(args)}
}

// 4. exit_plan_mode reviews the plan with the user: without elicitation
// the review arrives as a permission prompt on the tool card (Approve /
// Keep planning), never hangs, and approval returns the session to the
// default mode; with elicitation it is a form.
func TestExitPlanModeElicitation(t *testing.T) {
	for _, tc := range []struct {
		name, choose string
		approved     bool
	}{{"client without elicitation approves", "choice-0", true}, {"client without elicitation keeps planning", "choice-1", false}} {
		t.Run(tc.name, func(t *testing.T) {
			root, ws := t.TempDir(), t.TempDir()
			p := newProvider()
			answer := func(method string, _ json.RawMessage) any {
				if method != "session/request_permission" {
					return nil
				}
				return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": tc.choose}}
			}
			srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, answer)
			s := srv.newSession(t, ws)
			srv.setMode(t, s.SessionID, "plan")
			p.script("present the plan", exitPlan())

			start := time.Now()
			stop, lines := srv.prompt(t, s.SessionID, "present the plan")
			assert.Equal(t, "end_turn", stop)
			assert.Less(t, time.Since(start), 5*time.Second, "the prompt should finish promptly")
			assert.Empty(t, agentRequests(srv.c.snapshot(), "elicitation/create"))

			reqs := agentRequests(lines, "session/request_permission")
			require.Len(t, reqs, 1)
			evs := readLog(t, root, s.SessionID)
			rs := toolResults(t, evs)
			require.Len(t, rs, 1)
			// The request shows the plan under review and the question.
			assert.JSONEq(t, `{"sessionId":"`+s.SessionID+`","toolCall":{"toolCallId":"`+rs[0].CallID+`","title":"Tidy up","kind":"switch_mode","status":"pending",`+
				`"rawInput":{"plan":`+jsonString(planText)+`},"content":[{"type":"content","content":{"type":"text","text":`+jsonString(planText)+`}},`+
				`{"type":"content","content":{"type":"text","text":"Approve this plan and leave plan mode?"}}]},`+
				`"options":[{"optionId":"choice-0","name":"Approve","kind":"allow_once"},{"optionId":"choice-1","name":"Keep planning","kind":"reject_once"}]}`, string(reqs[0].Params))
			if tc.approved {
				assert.False(t, rs[0].IsError)
				assert.Equal(t, []string{`{"mode":"plan"}`, `{"mode":"default"}`}, ofType(evs, "mode/set"))
				return
			}
			assert.Equal(t, "Error: The user chose to keep planning; revise the plan and present it again.", rs[0].text())
			assert.Equal(t, []string{`{"mode":"plan"}`}, ofType(evs, "mode/set"))
			for _, u := range updates(lines, s.SessionID) {
				assert.NotContains(t, u, "current_mode_update")
			}
		})
	}

	t.Run("client with elicitation approves", func(t *testing.T) {
		root, ws := t.TempDir(), t.TempDir()
		p := newProvider()
		answer := func(method string, _ json.RawMessage) any {
			if method != "elicitation/create" {
				return nil
			}
			return map[string]any{"action": "accept", "content": map[string]any{"choice": "Approve"}}
		}
		srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, answer)
		s := srv.newSession(t, ws)
		srv.setMode(t, s.SessionID, "plan")
		p.script("present the plan", exitPlan())

		stop, lines := srv.prompt(t, s.SessionID, "present the plan")
		assert.Equal(t, "end_turn", stop)

		reqs := agentRequests(lines, "elicitation/create")
		require.Len(t, reqs, 1)
		assert.JSONEq(t, `{"sessionId":"`+s.SessionID+`","mode":"form","message":"Approve this plan and leave plan mode?","requestedSchema":{"type":"object","title":"Plan review","properties":{`+
			`"choice":{"type":"string","title":"Approve this plan and leave plan mode?","description":"Choose one option, or fill a custom answer below.","oneOf":[`+
			`{"const":"Approve","title":"Approve: Leave plan mode; the full toolset returns on the next step."},`+
			`{"const":"Keep planning","title":"Keep planning: Stay in plan mode; feedback goes back to the model."}]},`+
			`"custom":{"type":"string","title":"Custom answer","description":"Optional free-form answer. Leave empty to use the selected option."}},"required":[]}}`,
			string(reqs[0].Params))

		evs := readLog(t, root, s.SessionID)
		assert.Equal(t, []string{`{"mode":"plan"}`, `{"mode":"default"}`}, ofType(evs, "mode/set"))
		rs := toolResults(t, evs)
		require.Len(t, rs, 1)
		assert.Equal(t, "Plan approved — plan mode exited; the full toolset returns on your next step.", rs[0].text())
		assert.False(t, rs[0].IsError)

		// Wire order: tool_call, elicitation/create, current_mode_update default, tool_call_update.
		idx := func(pred func(string) bool) int {
			for i, l := range lines {
				if pred(l) {
					return i
				}
			}
			return -1
		}
		iCall := idx(func(l string) bool {
			return strings.Contains(l, `"sessionUpdate":"tool_call"`) && strings.Contains(l, rs[0].CallID)
		})
		iAsk := idx(func(l string) bool { return strings.Contains(l, `"method":"elicitation/create"`) })
		iMode := idx(func(l string) bool {
			return strings.Contains(l, `{"sessionUpdate":"current_mode_update","currentModeId":"default"}`)
		})
		iResult := idx(func(l string) bool {
			return strings.Contains(l, `"sessionUpdate":"tool_call_update"`) && strings.Contains(l, rs[0].CallID)
		})
		require.True(t, iCall >= 0 && iAsk >= 0 && iMode >= 0 && iResult >= 0, "lines: %v", lines)
		assert.Less(t, iCall, iAsk)
		assert.Less(t, iAsk, iResult)
		assert.Less(t, iAsk, iMode)

		// The next step already has the full toolset back, without exit_plan_mode.
		mreqs := p.requestsFor(s.SessionID)
		require.Len(t, mreqs, 2)
		assert.Equal(t, planTools("default"), toolNames(mreqs[0]))
		assert.Contains(t, toolNames(mreqs[1]), "write")
		assert.Contains(t, toolNames(mreqs[1]), "bash")
		assert.NotContains(t, toolNames(mreqs[1]), "exit_plan_mode")

	})
}

// The plan review's other answers keep the session planning.
func TestExitPlanModeNotApproved(t *testing.T) {
	cases := []struct {
		name   string
		answer map[string]any
		text   string
		err    string
	}{
		{"keep planning", map[string]any{"action": "accept", "content": map[string]any{"choice": "Keep planning"}},
			"Error: The user chose to keep planning; revise the plan and present it again.", ""},
		{"custom feedback empties the choice", map[string]any{"action": "accept", "content": map[string]any{"choice": "Approve", "custom": "add tests first"}},
			"Error: The user chose to keep planning; their feedback: add tests first", ""},
		{"cancelled", map[string]any{"action": "cancel"},
			"Error: ask_user_question was cancelled by the user", `{"name":"UserInteractionError","code":"ASK_CANCELLED"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, ws := t.TempDir(), t.TempDir()
			p := newProvider()
			answer := func(method string, _ json.RawMessage) any {
				if method != "elicitation/create" {
					return nil
				}
				return tc.answer
			}
			srv := serve(t, "plan-acp-agent", openStore(t, root), ws, p, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, answer)
			s := srv.newSession(t, ws)
			srv.setMode(t, s.SessionID, "plan")
			p.script("present the plan", exitPlan())
			stop, lines := srv.prompt(t, s.SessionID, "present the plan")
			assert.Equal(t, "end_turn", stop)
			assert.Len(t, agentRequests(lines, "elicitation/create"), 1)

			evs := readLog(t, root, s.SessionID)
			rs := toolResults(t, evs)
			require.Len(t, rs, 1)
			assert.Equal(t, tc.text, rs[0].text())
			assert.True(t, rs[0].IsError)
			if tc.err == "" {
				assert.Empty(t, string(rs[0].Error))
			} else {
				assert.JSONEq(t, tc.err, string(rs[0].Error))
			}
			assert.Equal(t, []string{`{"mode":"plan"}`}, ofType(evs, "mode/set"))
			for _, u := range updates(lines, s.SessionID) {
				assert.NotContains(t, u, "current_mode_update")
			}
			reqs := p.requestsFor(s.SessionID)
			require.Len(t, reqs, 2)
			assert.Equal(t, []string{"exit_plan_mode", "read", "todo_write"}, toolNames(reqs[1]))
		})
	}
}

// A sandbox switch made while a turn is open is logged at once, and the
// turn's next bash call runs under it.
func TestSandboxSwitchDuringTurnAppliesAtOnce(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	srv := serve(t, "sandbox-acp-agent", openStore(t, root), ws, p, map[string]any{}, nil)
	s := srv.newSession(t, ws)
	file := filepath.Join(ws, "mid.txt")
	p.script("write mid-turn", bashWrite(file, "mid"))
	g := p.hold("write mid-turn")
	defer g.open()

	_, ch := srv.c.request("session/prompt", promptParams(s.SessionID, "write mid-turn"))
	g.waitReached(t)
	r := srv.setConfig(t, s.SessionID, "sandbox-mode", "workspace-write")
	assert.Equal(t, "workspace-write", r.values()["sandbox-mode"])
	g.open()
	f := srv.c.await(ch, "prompt")
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(f.Result), string(f.Error))

	assert.FileExists(t, file)
	assert.Equal(t, "mid\n", lastResult(t, root, s.SessionID).text())
	evs := readLog(t, root, s.SessionID)
	ts := types(evs)
	iKnob, iHeader, iCall := indexOf(ts, "bash/sandbox-mode"), indexOf(ts, "request/header"), indexOf(ts, "tool/call")
	require.True(t, iKnob >= 0, "%v", ts)
	assert.Less(t, iHeader, iKnob)
	assert.Less(t, iKnob, iCall)

	// The next turn does not log it again.
	stop, _ := srv.prompt(t, s.SessionID, "hello")
	assert.Equal(t, "end_turn", stop)
	assert.Equal(t, []string{`{"mode":"workspace-write"}`}, ofType(readLog(t, root, s.SessionID), "bash/sandbox-mode"))
}

// A mode switch made during a step is flushed at its step/end: the step's
// own calls are still gated by the logged plan mode, the next step gets the
// full toolset and a notice, and the client hears of the switch only once.
func TestModeSwitchDuringTurnFlushesAtStepEnd(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, nil)
	s := srv.newSession(t, ws)
	srv.setMode(t, s.SessionID, "plan")
	target := filepath.Join(ws, "early.txt")
	args, _ := json.Marshal(map[string]string{"file_path": target, "content": "too early\n"})
	p.script("switch mid-step", toolCall{Name: "write", Args: string(args)})
	g := p.hold("switch mid-step")
	defer g.open()

	mark := srv.c.mark()
	_, ch := srv.c.request("session/prompt", promptParams(s.SessionID, "switch mid-step"))
	g.waitReached(t)
	srv.setMode(t, s.SessionID, "default")
	g.open()
	f := srv.c.await(ch, "prompt")
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(f.Result), string(f.Error))
	lines := srv.c.since(mark)

	assert.NoFileExists(t, target)
	evs := readLog(t, root, s.SessionID)
	rs := toolResults(t, evs)
	require.Len(t, rs, 1)
	assert.Equal(t, strings.Replace(planDenial, "%s", "write", 1), rs[0].text())

	ts := types(evs)
	assert.Equal(t, []string{`{"mode":"plan"}`, `{"mode":"default"}`}, ofType(evs, "mode/set"))
	i := indexOf(ts, "step/end")
	require.True(t, i >= 0 && i+3 < len(ts), "%v", ts)
	assert.Equal(t, []string{"step/end", "mode/set", "context/message", "step/start"}, ts[i:i+4])
	notices := ofType(evs, "context/message")
	require.Len(t, notices, 1)
	assert.Contains(t, notices[0], "The user switched this session back to the default mode.")
	assert.Contains(t, notices[0], `"source":{"kind":"plugin","plugin":"mode"}`)

	reqs := p.requestsFor(s.SessionID)
	require.Len(t, reqs, 2)
	assert.Equal(t, planTools("default"), toolNames(reqs[0]))
	assert.Contains(t, toolNames(reqs[1]), "write")
	assert.NotContains(t, toolNames(reqs[1]), "exit_plan_mode")

	n := 0
	for _, u := range updates(lines, s.SessionID) {
		if strings.Contains(u, "current_mode_update") {
			n++
			assert.Equal(t, `{"sessionUpdate":"current_mode_update","currentModeId":"default"}`, u)
		}
	}
	assert.Equal(t, 1, n, "the flush of a mode the client selected is silent")
}

// 5. The mode survives a restart: session/load folds it from the log.
func TestModeSurvivesRestart(t *testing.T) {
	for _, comp := range []string{"default", "plan-acp-agent"} {
		t.Run(comp, func(t *testing.T) {
			root, ws := t.TempDir(), t.TempDir()
			p := newProvider()
			store := openStore(t, root)
			srv := serve(t, comp, store, ws, p, map[string]any{}, nil)
			s := srv.newSession(t, ws)
			srv.setMode(t, s.SessionID, "plan")
			stop, _ := srv.prompt(t, s.SessionID, "think first")
			assert.Equal(t, "end_turn", stop)
			srv.stop()
			require.NoError(t, store.Close())
			assert.Equal(t, []string{`{"mode":"plan"}`}, ofType(readLog(t, root, s.SessionID), "mode/set"))

			p2 := newProvider()
			srv2 := serve(t, comp, openStore(t, root), ws, p2, map[string]any{}, nil)
			mark := srv2.c.mark()
			l := srv2.loadSession(t, s.SessionID, ws)
			require.NotNil(t, l.Modes)
			assert.Equal(t, "plan", l.Modes.CurrentModeID)
			for _, u := range updates(srv2.c.since(mark), s.SessionID) {
				assert.NotContains(t, u, "current_mode_update", "load replays no mode updates")
			}

			// And the reloaded session is still planning.
			stop, _ = srv2.prompt(t, s.SessionID, "again")
			assert.Equal(t, "end_turn", stop)
			reqs := p2.requestsFor(s.SessionID)
			require.Len(t, reqs, 1)
			assert.Equal(t, planTools(comp), toolNames(reqs[0]))
		})
	}
}

// 6. Approval policy never rejects an escalation without asking the client.
func TestEscalationUnderNeverIsRejectedWithoutAsking(t *testing.T) {
	escalate := func(path string) toolCall {
		args, _ := json.Marshal(map[string]string{"command": "printf 'esc\\n' > " + path + " && cat " + path,
			"description": "write " + filepath.Base(path), "sandbox_permissions": "workspace-write",
			"justification": "the user asked to write it"})
		return toolCall{Name: "bash", Args: string(args)}
	}
	run := func(t *testing.T, policy, permission string) (root, sid, file string, res toolResult, lines []string, evs []event) {
		root, ws := t.TempDir(), t.TempDir()
		p := newProvider()
		answer := func(method string, _ json.RawMessage) any {
			if method != "session/request_permission" {
				return nil
			}
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": permission}}
		}
		srv := serve(t, "sandbox-acp-agent", openStore(t, root), ws, p, map[string]any{}, answer)
		s := srv.newSession(t, ws)
		assert.Equal(t, map[string]string{"sandbox-mode": "read-only", "approval-policy": "ask"}, s.values())
		if policy != "ask" {
			r := srv.setConfig(t, s.SessionID, "approval-policy", policy)
			assert.Equal(t, map[string]string{"sandbox-mode": "read-only", "approval-policy": policy}, r.values())
		}
		file = filepath.Join(ws, "escalated.txt")
		p.script("escalate", escalate(file))
		stop, lines := srv.prompt(t, s.SessionID, "escalate")
		assert.Equal(t, "end_turn", stop)
		evs = readLog(t, root, s.SessionID)
		rs := toolResults(t, evs)
		require.Len(t, rs, 1)
		return root, s.SessionID, file, rs[0], lines, evs
	}

	t.Run("never", func(t *testing.T) {
		_, sid, file, res, lines, evs := run(t, "never", "allow-once")
		assert.Empty(t, agentRequests(lines, "session/request_permission"), "policy never must not ask the client")
		assert.Equal(t, `Error: the user rejected escalating this command to "workspace-write"`, res.text())
		assert.True(t, res.IsError)
		assert.Empty(t, string(res.Error))
		assert.NoFileExists(t, file)

		ts := types(evs)
		i := indexOf(ts, "tool/call")
		require.GreaterOrEqual(t, i, 0)
		assert.Equal(t, []string{"tool/call", "approval/asked", "approval/decided", "tool/result"}, ts[i:i+4])
		askedEv := ofType(evs, "approval/asked")
		decidedEv := ofType(evs, "approval/decided")
		require.Len(t, askedEv, 1)
		require.Len(t, decidedEv, 1)
		var a struct{ ID, ToolName, CallID, Reason string }
		require.NoError(t, json.Unmarshal([]byte(askedEv[0]), &a))
		assert.Equal(t, "bash", a.ToolName)
		assert.Equal(t, res.CallID, a.CallID)
		assert.Equal(t, "escalate sandbox to workspace-write: the user asked to write it", a.Reason)
		assert.JSONEq(t, `{"id":`+jsonString(a.ID)+`,"outcome":"rejected"}`, decidedEv[0])
		assert.NotEmpty(t, a.ID)
		up := updateFor(lines, sid, res.CallID)
		assert.Contains(t, up, `"status":"failed"`)
	})

	// Control: under ask the same call does reach the client, and approval runs it.
	t.Run("ask", func(t *testing.T) {
		_, _, file, res, lines, evs := run(t, "ask", "allow-once")
		assert.Len(t, agentRequests(lines, "session/request_permission"), 1)
		assert.Equal(t, "esc\n", res.text())
		assert.FileExists(t, file)
		decided := ofType(evs, "approval/decided")
		require.Len(t, decided, 1)
		assert.Contains(t, decided[0], `"outcome":"allowed-once"`)
	})
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// planTools is what plan mode offers in a composition: the read-only
// tools it mounts.
func planTools(comp string) []string {
	if comp == "default" {
		return []string{"exit_plan_mode", "glob", "grep", "read", "todo_write", "web_fetch"}
	}
	return []string{"exit_plan_mode", "read", "todo_write"}
}
