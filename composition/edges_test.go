package composition_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exit_plan_mode called outside plan mode reaches the tool (the gate passes
// everything in default) and is refused by it.
func TestExitPlanModeOutsidePlanMode(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	asked := make(chan struct{}, 1)
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
		func(string, json.RawMessage) any { asked <- struct{}{}; return nil })
	sid := srv.newSession(t, ws).SessionID
	p.script("present", exitPlan())
	stop, _ := srv.prompt(t, sid, "present")
	assert.Equal(t, "end_turn", stop)
	rs := toolResults(t, readLog(t, root, sid))
	require.Len(t, rs, 1)
	assert.Equal(t, "Error: exit_plan_mode is only available in plan mode", rs[0].text())
	assert.Empty(t, string(rs[0].Error))
	assert.Len(t, asked, 0)
	reqs := p.requestsFor(sid)
	require.NotEmpty(t, reqs)
	assert.NotContains(t, toolNames(reqs[0]), "exit_plan_mode", "exit_plan_mode is offered only in plan mode")
}

// Switches held while idle survive a restart: the default composition
// records them (knob/pending) before acknowledging them, and the next turn
// anchors them as the contract says.
func TestHeldSwitchesSurviveARestart(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	store := openStore(t, root)
	srv := serve(t, "default", store, ws, newProvider(), map[string]any{}, nil)
	sid := srv.newSession(t, ws).SessionID
	stop, _ := srv.prompt(t, sid, "hello")
	require.Equal(t, "end_turn", stop)
	srv.setMode(t, sid, "plan")
	r := srv.setConfig(t, sid, "sandbox-mode", "danger-full-access")
	assert.Equal(t, "danger-full-access", r.values()["sandbox-mode"])
	r = srv.setConfig(t, sid, "sandbox-mode", "read-only")
	assert.Equal(t, "read-only", r.values()["sandbox-mode"])
	srv.stop()
	require.NoError(t, store.Close())

	p2 := newProvider()
	srv2 := serve(t, "default", openStore(t, root), ws, p2, map[string]any{}, nil)
	l := srv2.loadSession(t, sid, ws)
	assert.Equal(t, "plan", l.Modes.CurrentModeID)
	assert.Equal(t, map[string]string{"mode": "plan", "model": defaultModel, "thinking": "enabled", "tool-mode": "native", "network": "off", "sandbox-mode": "read-only", "approval-policy": "ask"}, l.values())
	evs := readLog(t, root, sid)
	assert.Empty(t, ofType(evs, "mode/set"))
	assert.Empty(t, ofType(evs, "bash/sandbox-mode"))

	// The next turn anchors them exactly once, as for a live switch.
	stop, _ = srv2.prompt(t, sid, "again")
	require.Equal(t, "end_turn", stop)
	evs = readLog(t, root, sid)
	assert.Equal(t, []string{`{"mode":"plan"}`}, ofType(evs, "mode/set"))
	assert.Equal(t, []string{`{"mode":"read-only"}`}, ofType(evs, "bash/sandbox-mode"))
}

// Many sessions switching and prompting at once stay consistent: each
// session's log folds to the last value set on it.
func TestConcurrentSwitchingStress(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, nil)
	args, _ := json.Marshal(map[string]string{"command": "true", "description": "nothing"})
	p.script("go", toolCall{Name: "bash", Args: string(args)})
	const sessions, rounds = 4, 6
	modes := []string{"read-only", "workspace-write", "danger-full-access"}
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = srv.newSession(t, ws).SessionID
	}
	errs := make(chan error, sessions*rounds*4)
	last := make([]string, sessions)
	lastMode := make([]string, sessions)
	var wg sync.WaitGroup
	for i, sid := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do := func(method string, params any) {
				_, ch := srv.c.request(method, params)
				select {
				case f, ok := <-ch:
					if !ok || len(f.Error) > 0 {
						errs <- fmt.Errorf("%s on %s: %s", method, sid, f.Error)
					}
				case <-time.After(waitFor):
					errs <- fmt.Errorf("%s on %s: no answer", method, sid)
				}
			}
			for r := 0; r < rounds; r++ {
				m := modes[(i+r)%len(modes)]
				mode := []string{"plan", "default"}[(i+r)%2]
				do("session/set_config_option", map[string]any{"sessionId": sid, "configId": "sandbox-mode", "value": m})
				do("session/set_mode", map[string]any{"sessionId": sid, "modeId": mode})
				do("session/prompt", promptParams(sid, "go"))
				last[i], lastMode[i] = m, mode
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, sid := range ids {
		evs := readLog(t, root, sid)
		knobs := ofType(evs, "bash/sandbox-mode")
		folded := "workspace-write"
		if len(knobs) > 0 {
			folded = knobs[len(knobs)-1]
			folded = strings.TrimSuffix(strings.TrimPrefix(folded, `{"mode":"`), `"}`)
		}
		assert.Equal(t, last[i], folded, "session %d", i)
		ms := ofType(evs, "mode/set")
		require.NotEmpty(t, ms)
		assert.Equal(t, `{"mode":"`+lastMode[i]+`"}`, ms[len(ms)-1], "session %d", i)
		assert.Len(t, ofType(evs, "turn/end"), rounds)
		r := srv.setConfig(t, sid, "sandbox-mode", last[i])
		assert.Equal(t, last[i], r.values()["sandbox-mode"])
	}
}

// An approved escalation covers its own call only (sandbox-approval-modes
// § 4): the next call runs under the session's mode again.
func TestEscalationGrantIsForOneCall(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	srv := serve(t, "sandbox-acp-agent", openStore(t, root), ws, p, map[string]any{}, func(method string, _ json.RawMessage) any {
		if method != "session/request_permission" {
			return nil
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-once"}}
	})
	sid := srv.newSession(t, ws).SessionID
	granted, plain := filepath.Join(ws, "granted.txt"), filepath.Join(ws, "plain.txt")
	args, _ := json.Marshal(map[string]string{"command": "printf 'g\\n' > " + granted, "description": "write granted.txt",
		"sandbox_permissions": "workspace-write", "justification": "the user asked for it"})
	p.script("two writes", toolCall{Name: "bash", Args: string(args)}, bashWrite(plain, "p"))
	stop, lines := srv.prompt(t, sid, "two writes")
	assert.Equal(t, "end_turn", stop)
	assert.Len(t, agentRequests(lines, "session/request_permission"), 1)
	assert.FileExists(t, granted)
	assert.NoFileExists(t, plain)
	rs := toolResults(t, readLog(t, root, sid))
	require.Len(t, rs, 2)
	assert.Contains(t, rs[1].text(), readOnlyMarker)
}

// The sandbox mode is never stated in the system prompt (sandbox-approval-
// modes § 4): sessions differing only in their mode get the same prompt.
func TestSandboxModeIsNotInThePrompt(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	srv := serve(t, "sandbox-acp-agent", openStore(t, root), ws, p, map[string]any{}, nil)
	a, b := srv.newSession(t, ws).SessionID, srv.newSession(t, ws).SessionID
	srv.setConfig(t, b, "sandbox-mode", "danger-full-access")
	for _, sid := range []string{a, b} {
		stop, _ := srv.prompt(t, sid, "hello")
		require.Equal(t, "end_turn", stop)
	}
	ra, rb := p.requestsFor(a), p.requestsFor(b)
	require.Len(t, ra, 1)
	require.Len(t, rb, 1)
	assert.Equal(t, ra[0].System, rb[0].System)
	assert.Equal(t, ra[0].Tools, rb[0].Tools)
	assert.Empty(t, ofType(readLog(t, root, b), "context/message"))
}

// A session planned under a composition with modes, loaded by one without
// the mode service: the logged plan mode has no effect there.
func TestPlanLogLoadedWithoutModeService(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	store := openStore(t, root)
	srv := serve(t, "default", store, ws, newProvider(), map[string]any{}, nil)
	sid := srv.newSession(t, ws).SessionID
	srv.setMode(t, sid, "plan")
	stop, _ := srv.prompt(t, sid, "plan")
	require.Equal(t, "end_turn", stop)
	srv.stop()
	require.NoError(t, store.Close())

	p := newProvider()
	srv2 := serve(t, "sandbox-acp-agent", openStore(t, root), ws, p, map[string]any{}, nil)
	l := srv2.loadSession(t, sid, ws)
	assert.Nil(t, l.Modes)
	file := filepath.Join(ws, "w.txt")
	srv2.setConfig(t, sid, "sandbox-mode", "workspace-write")
	p.script("write", bashWrite(file, "w"))
	stop, _ = srv2.prompt(t, sid, "write")
	require.Equal(t, "end_turn", stop)
	assert.FileExists(t, file, "plan mode is not enforced without the mode service")
	reqs := p.requestsFor(sid)
	require.NotEmpty(t, reqs)
	assert.Equal(t, []string{"bash", "task_kill", "task_list", "task_output"}, toolNames(reqs[0]))
}

// The same load, checked for the mode service's notice: a composition that
// does not compose modes appends nothing about modes (sandbox-approval-modes
// § 8 makes the "no longer defined" notice part of the mode service).
func TestNoModeNoticeWithoutModeService(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	store := openStore(t, root)
	srv := serve(t, "default", store, ws, newProvider(), map[string]any{}, nil)
	sid := srv.newSession(t, ws).SessionID
	srv.setMode(t, sid, "plan")
	stop, _ := srv.prompt(t, sid, "plan")
	require.Equal(t, "end_turn", stop)
	srv.stop()
	require.NoError(t, store.Close())

	srv2 := serve(t, "sandbox-acp-agent", openStore(t, root), ws, newProvider(), map[string]any{}, nil)
	srv2.loadSession(t, sid, ws)
	stop, _ = srv2.prompt(t, sid, "again")
	require.Equal(t, "end_turn", stop)
	assert.Empty(t, ofType(readLog(t, root, sid), "context/message"), "the mode service is not composed, so nothing about modes is told")
}

// All idle switches anchor at the next turn in the contract's order:
// turn/start, mode/set, bash/sandbox-mode, approval/policy, user/message.
func TestIdleSwitchesAnchorInOrder(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	srv := serve(t, "default", openStore(t, root), ws, newProvider(), map[string]any{}, nil)
	sid := srv.newSession(t, ws).SessionID
	srv.setConfig(t, sid, "approval-policy", "never")
	srv.setConfig(t, sid, "sandbox-mode", "read-only")
	srv.setMode(t, sid, "plan")
	stop, _ := srv.prompt(t, sid, "hello")
	require.Equal(t, "end_turn", stop)
	evs := readLog(t, root, sid)
	assert.Equal(t, []string{"turn/start", "mode/set", "bash/sandbox-mode", "approval/policy", "user/message", "step/start", "request/header"}, types(evs)[:7])
	assert.Empty(t, ofType(evs, "context/message"), "a first step narrates nothing")
}

// The upstream plan composition does not require the capability: it asks
// anyway, and a client that cannot answer fails the review.
func TestUpstreamPlanReviewAsksWithoutCapability(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	srv := serve(t, "plan-acp-agent", openStore(t, root), ws, p, map[string]any{}, nil) // answers every request with an error
	sid := srv.newSession(t, ws).SessionID
	srv.setMode(t, sid, "plan")
	p.script("present", exitPlan())
	stop, lines := srv.prompt(t, sid, "present")
	assert.Equal(t, "end_turn", stop)
	assert.Len(t, agentRequests(lines, "elicitation/create"), 1)
	rs := toolResults(t, readLog(t, root, sid))
	require.Len(t, rs, 1)
	assert.Equal(t, "Error: ACP elicitation request failed", rs[0].text())
	assert.JSONEq(t, `{"name":"UserInteractionError","code":"ASK_FAILED"}`, string(rs[0].Error))
}

// After a restart in plan mode, an approved review is announced: the last
// sent mode was initialised from the loaded log.
func TestPlanApprovalAfterRestartIsAnnounced(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	store := openStore(t, root)
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	approve := func(method string, _ json.RawMessage) any {
		if method != "elicitation/create" {
			return nil
		}
		return map[string]any{"action": "accept", "content": map[string]any{"choice": "Approve"}}
	}
	srv := serve(t, "default", store, ws, newProvider(), caps, approve)
	sid := srv.newSession(t, ws).SessionID
	srv.setMode(t, sid, "plan")
	stop, _ := srv.prompt(t, sid, "think")
	require.Equal(t, "end_turn", stop)
	srv.stop()
	require.NoError(t, store.Close())

	p := newProvider()
	srv2 := serve(t, "default", openStore(t, root), ws, p, caps, approve)
	require.Equal(t, "plan", srv2.loadSession(t, sid, ws).Modes.CurrentModeID)
	p.script("present", exitPlan())
	stop, lines := srv2.prompt(t, sid, "present")
	require.Equal(t, "end_turn", stop)
	var modeUpdates []string
	for _, u := range updates(lines, sid) {
		if strings.Contains(u, "current_mode_update") {
			modeUpdates = append(modeUpdates, u)
		}
	}
	assert.Equal(t, []string{`{"sessionUpdate":"current_mode_update","currentModeId":"default"}`}, modeUpdates)
	assert.Equal(t, []string{`{"mode":"plan"}`, `{"mode":"default"}`}, ofType(readLog(t, root, sid), "mode/set"))
}
