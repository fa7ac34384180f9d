package composition_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sandboxOption(v string) string {
	return `{"id":"sandbox-mode","name":"Sandbox","description":"The file sandbox mode bash commands in this session run under.","category":"mode","type":"select","currentValue":"` + v + `","options":[{"value":"read-only","name":"read-only"},{"value":"workspace-write","name":"workspace-write"},{"value":"danger-full-access","name":"danger-full-access"}]}`
}

func approvalOption(v string) string {
	return `{"id":"approval-policy","name":"Approvals","description":"ask: permission prompts reach you; never: they are rejected automatically.","type":"select","currentValue":"` + v + `","options":[{"value":"ask","name":"ask"},{"value":"never","name":"never"}]}`
}

const planModes = `"modes":{"availableModes":[{"id":"default","name":"default"},{"id":"plan","name":"plan"}],"currentModeId":"%s"}`

func errResp(id int, msg string) string {
	b, _ := json.Marshal(msg)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32602,"message":%s}}`, id, b)
}

// Each upstream composition advertises exactly the surfaces it mounts
// (acp-bridge §§ 3, 9, 10) and refuses the ones it does not (§§ 7, 8). The
// default composition's editor options: editor_test.go.
func TestCompositionSurfaces(t *testing.T) {
	type surface struct {
		comp    string
		options string // the configOptions array, "" = absent
		modes   bool
	}
	for _, c := range []surface{
		{"sandbox-acp-agent", "[" + sandboxOption("read-only") + "," + approvalOption("ask") + "]", false},
		{"plan-acp-agent", "", true},
		{"acp-agent", "", false},
	} {
		t.Run(c.comp, func(t *testing.T) {
			root, ws := t.TempDir(), t.TempDir()
			srv := serve(t, c.comp, openStore(t, root), ws, newProvider(), map[string]any{}, nil)
			cl := srv.c
			idOf := func(l string) int {
				var f frame
				require.NoError(t, json.Unmarshal([]byte(l), &f))
				var n int
				require.NoError(t, json.Unmarshal(f.ID, &n))
				return n
			}
			resp, _ := cl.roundtrip("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})
			var nr sessionResult
			var f frame
			require.NoError(t, json.Unmarshal([]byte(resp), &f))
			require.NoError(t, json.Unmarshal(f.Result, &nr))
			sid := nr.SessionID
			want := `{"sessionId":"` + sid + `"`
			if c.options != "" {
				want += `,"configOptions":` + c.options
			}
			if c.modes {
				want += "," + fmt.Sprintf(planModes, "default")
			}
			want += "}"
			assert.Equal(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, idOf(resp), want), resp)

			set := func(configID string, value any) string {
				l, _ := cl.roundtrip("session/set_config_option", map[string]any{"sessionId": sid, "configId": configID, "value": value})
				return l
			}
			l := set("reasoning-effort", "high")
			assert.Equal(t, errResp(idOf(l), `Invalid params: unknown config option "reasoning-effort"`), l)
			l = set("sandbox-mode", true)
			assert.Equal(t, errResp(idOf(l), `Invalid params: config option sandbox-mode is a select; boolean values are not accepted`), l)
			l = set("sandbox-mode", "yolo")
			assert.Equal(t, errResp(idOf(l), `Invalid params: unknown sandbox-mode value "yolo"`), l)
			if c.options == "" {
				l = set("sandbox-mode", "read-only")
				assert.Equal(t, errResp(idOf(l), `Invalid params: unknown sandbox-mode value "read-only"`), l)
				l = set("approval-policy", "ask")
				assert.Equal(t, errResp(idOf(l), `Invalid params: unknown approval-policy value "ask"`), l)
			} else {
				l = set("approval-policy", "always")
				assert.Equal(t, errResp(idOf(l), `Invalid params: unknown approval-policy value "always"`), l)
				l = set("approval-policy", "never")
				assert.Contains(t, l, approvalOption("never"))
			}

			mode := func(m string) (string, []string) {
				return cl.roundtrip("session/set_mode", map[string]any{"sessionId": sid, "modeId": m})
			}
			l, before := mode("plan")
			if !c.modes {
				assert.Equal(t, errResp(idOf(l), "Invalid params: session modes are not composed in this deployment"), l)
				assert.Empty(t, changeUpdates(before, sid))
				return
			}
			upd := `{"sessionUpdate":"current_mode_update","currentModeId":"plan"}`
			assert.Equal(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, idOf(l)), l)
			assert.Equal(t, []string{upd}, changeUpdates(before, sid))
			l, before = mode("plan") // announced even when already current
			assert.Equal(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, idOf(l)), l)
			assert.Equal(t, []string{upd}, changeUpdates(before, sid))
			l, before = mode("yolo")
			assert.Equal(t, errResp(idOf(l), `Invalid params: unknown mode "yolo" — available modes: default, plan`), l)
			assert.Empty(t, changeUpdates(before, sid))
		})
	}
}

// The approval narrator tells the model about a policy switch made between
// turns (sandbox-approval-modes § 6, corpus mode-switching), and an idle
// flip-flop that nets to nothing is neither logged nor narrated.
func TestApprovalPolicyNarration(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	srv := serve(t, "sandbox-acp-agent", openStore(t, root), ws, p, map[string]any{}, nil)
	s := srv.newSession(t, ws)
	sid := s.SessionID
	stop, _ := srv.prompt(t, sid, "turn one")
	require.Equal(t, "end_turn", stop)

	srv.setConfig(t, sid, "approval-policy", "never")
	stop, _ = srv.prompt(t, sid, "turn two")
	require.Equal(t, "end_turn", stop)

	srv.setConfig(t, sid, "approval-policy", "ask")
	r := srv.setConfig(t, sid, "approval-policy", "never") // back: nets to no change
	assert.Equal(t, "never", r.values()["approval-policy"])
	stop, _ = srv.prompt(t, sid, "turn three")
	require.Equal(t, "end_turn", stop)

	evs := readLog(t, root, sid)
	var turn2, turn3 []string
	turn := 0
	for _, e := range evs {
		if e.Type == "turn/start" {
			turn++
		}
		if e.Type == "assistant/chunk" {
			continue
		}
		switch turn {
		case 2:
			turn2 = append(turn2, e.Type)
		case 3:
			turn3 = append(turn3, e.Type)
		}
	}
	require.GreaterOrEqual(t, len(turn2), 6)
	assert.Equal(t, []string{"turn/start", "approval/policy", "user/message", "context/message", "step/start", "request/header-delta"}, turn2[:6])
	assert.Equal(t, []string{"turn/start", "user/message", "step/start"}, turn3[:3])
	msgs := ofType(evs, "context/message")
	require.Len(t, msgs, 1)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"The approval policy changed from \"ask\" to \"never\" (changed by the user)."}],"source":{"kind":"plugin","plugin":"approval"}}`, msgs[0])
	assert.Equal(t, []string{`{"policy":"never"}`}, ofType(evs, "approval/policy"))

	reqs := p.requestsFor(sid)
	require.Len(t, reqs, 3)
	assert.NotContains(t, reqs[0].System, "Approval prompts are off")
	assert.Contains(t, reqs[1].System, "Approval prompts are off")
	assert.Contains(t, reqs[2].System, "Approval prompts are off")
}

// The escalation's other outcomes and refusals (sandbox-approval-modes § 5).
func TestEscalationOutcomes(t *testing.T) {
	type tc struct {
		name    string
		comp    string
		mode    string // sandbox-mode switch, "" = default
		want    string // sandbox_permissions
		answer  agentAnswer
		asks    int    // session/request_permission requests expected
		outcome string // approval/decided outcome, "" = no approval asked
		text    string // tool result text
		written bool
	}
	permission := func(outcome map[string]any) agentAnswer {
		return func(method string, _ json.RawMessage) any {
			if method != "session/request_permission" {
				return nil
			}
			return map[string]any{"outcome": outcome}
		}
	}
	cases := []tc{
		{name: "rejected by the user", comp: "sandbox-acp-agent", want: "workspace-write",
			answer: permission(map[string]any{"outcome": "selected", "optionId": "reject-once"}), asks: 1, outcome: "rejected",
			text: `Error: the user rejected escalating this command to "workspace-write"`},
		{name: "cancelled by the client", comp: "sandbox-acp-agent", want: "workspace-write",
			answer: permission(map[string]any{"outcome": "cancelled"}), asks: 1, outcome: "cancelled",
			text: `Error: approval for escalating to "workspace-write" was cancelled`},
		{name: "client cannot answer", comp: "sandbox-acp-agent", want: "workspace-write",
			answer: nil, asks: 1, outcome: "unavailable",
			text: `Error: sandbox escalation to "workspace-write" requires approval, but no approval channel is available`},
		{name: "approved", comp: "sandbox-acp-agent", want: "danger-full-access",
			answer: permission(map[string]any{"outcome": "selected", "optionId": "allow-once"}), asks: 1, outcome: "allowed-once",
			text: "esc\n", written: true},
		{name: "not wider than the session mode", comp: "default", want: "workspace-write",
			text: `Error: sandbox escalation to "workspace-write" is not strictly wider than this call's current "workspace-write" mode`},
		{name: "nothing is wider than danger-full-access", comp: "sandbox-acp-agent", mode: "danger-full-access", want: "danger-full-access",
			text: `Error: sandbox escalation to "danger-full-access" is not strictly wider than this call's current "danger-full-access" mode`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, ws := t.TempDir(), t.TempDir()
			p := newProvider()
			srv := serve(t, c.comp, openStore(t, root), ws, p, map[string]any{}, c.answer)
			s := srv.newSession(t, ws)
			if c.mode != "" {
				srv.setConfig(t, s.SessionID, "sandbox-mode", c.mode)
			}
			// The file lives in a directory outside the workspace only for
			// the danger-full-access case, which must reach it.
			dir := ws
			if c.want == "danger-full-access" {
				dir = t.TempDir()
			}
			file := filepath.Join(dir, "esc.txt")
			args, _ := json.Marshal(map[string]string{"command": "printf 'esc\\n' > " + file + " && cat " + file,
				"description": "write esc.txt", "sandbox_permissions": c.want, "justification": "the user asked for it"})
			p.script("escalate", toolCall{Name: "bash", Args: string(args)})
			stop, lines := srv.prompt(t, s.SessionID, "escalate")
			assert.Equal(t, "end_turn", stop)

			assert.Len(t, agentRequests(lines, "session/request_permission"), c.asks)
			evs := readLog(t, root, s.SessionID)
			rs := toolResults(t, evs)
			require.Len(t, rs, 1)
			assert.Equal(t, c.text, rs[0].text())
			assert.Equal(t, !c.written, rs[0].IsError)
			assert.Empty(t, string(rs[0].Error))
			if c.written {
				assert.FileExists(t, file)
			} else {
				assert.NoFileExists(t, file)
			}
			decided := ofType(evs, "approval/decided")
			if c.outcome == "" {
				assert.Empty(t, ofType(evs, "approval/asked"))
				assert.Empty(t, decided)
				return
			}
			require.Len(t, decided, 1)
			assert.Contains(t, decided[0], `"outcome":"`+c.outcome+`"`)
			for _, r := range agentRequests(lines, "session/request_permission") {
				assert.JSONEq(t, `{"sessionId":"`+s.SessionID+`","toolCall":{"toolCallId":"`+rs[0].CallID+`"},"options":[{"optionId":"allow-once","name":"Allow once","kind":"allow_once"},{"optionId":"reject-once","name":"Reject","kind":"reject_once"}]}`, string(r.Params))
			}
		})
	}
}

// The writable workspace root: upstream's sandbox-acp-agent confines to the
// launch directory; the default composition to the session's project.
func TestSandboxWorkspaceRoot(t *testing.T) {
	for _, c := range []struct {
		comp, mode    string
		launchWrites  bool
		sessionWrites bool
	}{
		{"default", "", false, true},
		{"sandbox-acp-agent", "workspace-write", true, false},
	} {
		t.Run(c.comp, func(t *testing.T) {
			root, launch, cwd := t.TempDir(), t.TempDir(), t.TempDir()
			p := newProvider()
			srv := serve(t, c.comp, openStore(t, root), launch, p, map[string]any{}, nil)
			s := srv.newSession(t, cwd)
			if c.mode != "" {
				srv.setConfig(t, s.SessionID, "sandbox-mode", c.mode)
			}
			inLaunch, inCwd := filepath.Join(launch, "l.txt"), filepath.Join(cwd, "c.txt")
			p.script("write both", bashWrite(inLaunch, "l"), bashWrite(inCwd, "c"))
			stop, _ := srv.prompt(t, s.SessionID, "write both")
			assert.Equal(t, "end_turn", stop)
			assert.Equal(t, c.launchWrites, exists(inLaunch), "write into the launch dir")
			assert.Equal(t, c.sessionWrites, exists(inCwd), "write into the session cwd")
			for _, r := range toolResults(t, readLog(t, root, s.SessionID)) {
				if strings.Contains(r.text(), "[sandbox:") {
					assert.Contains(t, r.text(), "[sandbox: file access denied under workspace-write mode]")
				}
			}
			_ = os.Remove(inLaunch)
		})
	}
}

// A policy switch made while a turn runs is logged at once and narrated
// before the turn's next step.
func TestApprovalPolicySwitchDuringTurnIsNarratedNextStep(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	srv := serve(t, "sandbox-acp-agent", openStore(t, root), ws, p, map[string]any{}, nil)
	sid := srv.newSession(t, ws).SessionID
	args, _ := json.Marshal(map[string]string{"command": "true", "description": "nothing"})
	p.script("switch now", toolCall{Name: "bash", Args: string(args)})
	g := p.hold("switch now")
	defer g.open()
	_, ch := srv.c.request("session/prompt", promptParams(sid, "switch now"))
	g.waitReached(t)
	srv.setConfig(t, sid, "approval-policy", "never")
	g.open()
	f := srv.c.await(ch, "prompt")
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(f.Result), string(f.Error))

	ts := types(readLog(t, root, sid))
	i := indexOf(ts, "step/end")
	require.True(t, i >= 0 && i+3 < len(ts), "%v", ts)
	assert.Equal(t, []string{"step/end", "context/message", "step/start", "request/header-delta"}, ts[i:i+4])
	iPolicy := indexOf(ts, "approval/policy")
	assert.True(t, iPolicy > indexOf(ts, "request/header") && iPolicy < i, "%v", ts)
	msgs := ofType(readLog(t, root, sid), "context/message")
	require.Len(t, msgs, 1)
	assert.Contains(t, msgs[0], `The approval policy changed from \"ask\" to \"never\" (changed by the user).`)
	reqs := p.requestsFor(sid)
	require.Len(t, reqs, 2)
	assert.NotContains(t, reqs[0].System, "Approval prompts are off")
	assert.Contains(t, reqs[1].System, "Approval prompts are off")
}

// waitLog polls a session's stored log until cond holds (bounded).
func waitLog(t *testing.T, root, sid string, cond func([]event) bool) []event {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		evs := readLog(t, root, sid)
		if cond(evs) {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("log condition not met within %s: %v", waitFor, types(evs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasTurnEnd(evs []event) bool { return len(ofType(evs, "turn/end")) > 0 }

// An unanswered agent request never wedges a session: session/cancel and
// client EOF both resolve it internally.
func TestUnansweredAgentRequests(t *testing.T) {
	type setup struct {
		name   string
		comp   string
		method string
		caps   map[string]any
		call   func(ws string) toolCall
		mode   string
	}
	setups := []setup{
		{name: "plan review", comp: "default", method: "elicitation/create", mode: "plan",
			caps: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
			call: func(string) toolCall { return exitPlan() }},
		{name: "escalation", comp: "sandbox-acp-agent", method: "session/request_permission", caps: map[string]any{},
			call: func(ws string) toolCall {
				args, _ := json.Marshal(map[string]string{"command": "touch " + filepath.Join(ws, "x"), "description": "touch x",
					"sandbox_permissions": "workspace-write", "justification": "needed"})
				return toolCall{Name: "bash", Args: string(args)}
			}},
	}
	for _, su := range setups {
		for _, how := range []string{"cancel", "eof"} {
			t.Run(su.name+"/"+how, func(t *testing.T) {
				root, ws := t.TempDir(), t.TempDir()
				p := newProvider()
				asked := make(chan struct{}, 1)
				answer := func(method string, _ json.RawMessage) any {
					if method == su.method {
						select {
						case asked <- struct{}{}:
						default:
						}
					}
					return noReply{}
				}
				srv := serve(t, su.comp, openStore(t, root), ws, p, su.caps, answer)
				sid := srv.newSession(t, ws).SessionID
				if su.mode != "" {
					srv.setMode(t, sid, su.mode)
				}
				p.script("ask", su.call(ws))
				_, ch := srv.c.request("session/prompt", promptParams(sid, "ask"))
				select {
				case <-asked:
				case <-time.After(waitFor):
					t.Fatalf("no %s request reached the client", su.method)
				}
				var evs []event
				if how == "cancel" {
					srv.c.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
					f := srv.c.await(ch, "cancelled prompt")
					assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(f.Result), string(f.Error))
					evs = waitLog(t, root, sid, hasTurnEnd)
					assert.JSONEq(t, `{"turn":1,"reason":{"kind":"aborted","reason":"session/cancel"}}`, ofType(evs, "turn/end")[0])
				} else {
					srv.stop() // bounded: fails the test if Serve does not return
					evs = readLog(t, root, sid)
					require.True(t, hasTurnEnd(evs), "%v", types(evs))
					assert.JSONEq(t, `{"turn":1,"reason":{"kind":"disposed"}}`, ofType(evs, "turn/end")[0])
				}
				rs := toolResults(t, evs)
				require.Len(t, rs, 1)
				assert.True(t, rs[0].IsError)
				// On cancel the request resolves as aborted/cancelled. On EOF
				// the connection is gone too, and whichever the waiting tool
				// sees first wins: the transport failure (acp-bridge §§ 13,
				// 14: unavailable / ASK_FAILED) or the disposal's abort.
				if su.method == "elicitation/create" {
					aborted := `{"name":"UserInteractionError","code":"ASK_ABORTED"}`
					want := map[string]string{"Error: ask_user_question was aborted before the user answered": aborted}
					if how == "eof" {
						want["Error: ACP elicitation request failed"] = `{"name":"UserInteractionError","code":"ASK_FAILED"}`
					}
					code, ok := want[rs[0].text()]
					assert.True(t, ok, "unexpected result %q", rs[0].text())
					if ok {
						assert.JSONEq(t, code, string(rs[0].Error))
					}
					assert.Equal(t, []string{`{"mode":"plan"}`}, ofType(evs, "mode/set"))
				} else {
					want := map[string]string{`Error: approval for escalating to "workspace-write" was cancelled`: "cancelled"}
					if how == "eof" {
						want[`Error: sandbox escalation to "workspace-write" requires approval, but no approval channel is available`] = "unavailable"
					}
					outcome, ok := want[rs[0].text()]
					assert.True(t, ok, "unexpected result %q", rs[0].text())
					decided := ofType(evs, "approval/decided")
					require.Len(t, decided, 1)
					assert.Contains(t, decided[0], `"outcome":"`+outcome+`"`)
					assert.NoFileExists(t, filepath.Join(ws, "x"))
				}
				if how == "cancel" {
					// The session keeps working.
					stop, _ := srv.prompt(t, sid, "after")
					assert.Equal(t, "end_turn", stop)
				}
			})
		}
	}
}
