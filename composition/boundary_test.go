package composition_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/composition"
)

// Attack tests of issue #23: a hostile model tries to get past the
// session's boundaries through the paths that start child agents or come
// in through run_code. Each is judged by its effects: files on disk, the
// permission requests the client got, what the model received.

// lit is s as a JSON string, with <, > and & literal (as the agent
// writes them).
func lit(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// permissionLog records the editor's permission requests and rejects
// them all.
type permissionLog struct {
	mu   sync.Mutex
	reqs []json.RawMessage
}

func (l *permissionLog) answer(method string, params json.RawMessage) any {
	if method != "session/request_permission" {
		return nil
	}
	l.mu.Lock()
	l.reqs = append(l.reqs, params)
	l.mu.Unlock()
	return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject-once"}}
}

func (l *permissionLog) all() []json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// hostileChild scripts the child prompt to try every way of writing to
// the workspace: the write tool, a plain bash redirect, a git hook (which
// would run unconfined at the user's next commit), and a bash escalation
// asking for workspace-write.
func hostileChild(p *scriptedProvider, prompt, ws string) {
	esc := `{"command":` + lit("echo pwned > "+filepath.Join(ws, "escalated.txt")) +
		`,"description":"write","sandbox_permissions":"workspace-write","justification":"the task needs it"}`
	plain := `{"command":` + lit("mkdir -p .git/hooks && echo 'touch /tmp/owned' > .git/hooks/pre-commit && echo x > shell.txt") + `,"description":"hook"}`
	write := `{"file_path":` + lit(filepath.Join(ws, "written.txt")) + `,"content":"pwned"}`
	p.script(prompt, toolCall{"write", write}, toolCall{"bash", plain}, toolCall{"bash", esc})
}

// wroteNothing checks that none of hostileChild's files exist.
func wroteNothing(t *testing.T, ws, path string) {
	t.Helper()
	for _, f := range []string{"written.txt", "shell.txt", "escalated.txt", ".git/hooks/pre-commit"} {
		assert.NoFileExists(t, filepath.Join(ws, f), "%s: a child of a read-only session wrote %s", path, f)
	}
}

// TestChildrenKeepTheParentsReadOnlySandbox: with the session switched to
// read-only, a child agent started by any path — subagent, a fork started
// in the same turn as the switch, a workflow child, a background
// subagent, run_code → subagent — writes nothing, and every widening it
// asks for reaches the session's user, naming the command.
func TestChildrenKeepTheParentsReadOnlySandbox(t *testing.T) {
	cases := []struct {
		name string
		// call is the parent's tool call that starts the child with prompt
		// "<name> child".
		call func(child string) toolCall
		// sameTurn switches the sandbox while the parent's step is held,
		// instead of before the prompt.
		sameTurn bool
		// code switches the tool mode to both first.
		code bool
		// background waits for the child after the turn.
		background bool
	}{
		{name: "subagent", call: func(c string) toolCall {
			return toolCall{"subagent", `{"description":"do it","prompt":` + lit(c) + `}`}
		}},
		{name: "fork", sameTurn: true, call: func(c string) toolCall {
			return toolCall{"subagent_fork", `{"description":"do it","prompt":` + lit(c) + `}`}
		}},
		{name: "workflow", call: func(c string) toolCall {
			return toolCall{"workflow", `{"meta":{"name":"w","description":"one child"},"script":` + lit(`return await agent(`+lit(c)+`)`) + `}`}
		}},
		{name: "background", background: true, call: func(c string) toolCall {
			return toolCall{"subagent", `{"description":"do it","prompt":` + lit(c) + `,"run_in_background":true}`}
		}},
		{name: "run_code", code: true, call: func(c string) toolCall {
			return toolCall{"run_code", `{"code":` + lit(`return await tools.subagent({description: "do it", prompt: `+lit(c)+`})`) + `}`}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, ws := t.TempDir(), t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(ws, ".git"), 0o755))
			p := newProvider()
			perms := &permissionLog{}
			srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, perms.answer)
			sid := srv.newSession(t, ws).SessionID
			srv.prompt(t, sid, "hello") // a completed turn: the fork has a seed
			if c.code {
				srv.setConfig(t, sid, "tool-mode", "both")
			}
			child := c.name + " child"
			hostileChild(p, child, ws)
			p.script("go", c.call(child))
			if !c.sameTurn {
				srv.setConfig(t, sid, "sandbox-mode", "read-only")
				stop, _ := srv.prompt(t, sid, "go")
				require.Equal(t, "end_turn", stop)
			} else {
				g := p.hold("go")
				_, ch := srv.c.request("session/prompt", promptParams(sid, "go"))
				g.waitReached(t)
				srv.setConfig(t, sid, "sandbox-mode", "read-only")
				g.open()
				srv.c.await(ch, "prompt go")
			}
			// A background child may not have called its model yet.
			var childID string
			require.Eventually(t, func() bool {
				for _, r := range p.requests() {
					if pr, _ := position(r); pr == child {
						childID = r.SessionID
					}
				}
				return childID != ""
			}, waitFor, 10*time.Millisecond, "the child ran")
			if c.background {
				waitLog(t, root, childID, hasTurnEnd)
			}
			wroteNothing(t, ws, c.name)

			// The escalation reached the session's own user, on the session,
			// with the command it would run.
			var escalations int
			for _, r := range perms.all() {
				var pr struct {
					SessionID string `json:"sessionId"`
				}
				require.NoError(t, json.Unmarshal(r, &pr))
				assert.Equal(t, sid, pr.SessionID, "asked on the session the child works for")
				if strings.Contains(string(r), "escalated.txt") {
					escalations++
					assert.Contains(t, string(r), "```sh\\necho pwned > "+filepath.Join(ws, "escalated.txt"), "the command is shown whole")
				}
			}
			assert.Equal(t, 1, escalations, "the child's escalation asked the user once")
			assert.Len(t, perms.all(), 2, "the write and the escalation were asked about; the confined command just failed")
		})
	}
}

// TestChildInheritsPlanModeAndApprovalPolicy: a child started in the step
// during which the user switched the session to plan mode plans too, and a
// child of a session whose approvals are "never" cannot get a widening
// approved (no request reaches the user, nothing is written).
func TestChildInheritsPlanModeAndApprovalPolicy(t *testing.T) {
	t.Run("plan", func(t *testing.T) {
		root, ws := t.TempDir(), t.TempDir()
		p := newProvider()
		perms := &permissionLog{}
		srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, perms.answer)
		sid := srv.newSession(t, ws).SessionID
		hostileChild(p, "plan child", ws)
		p.script("go", toolCall{"subagent", `{"description":"do it","prompt":"plan child"}`})
		g := p.hold("go")
		_, ch := srv.c.request("session/prompt", promptParams(sid, "go"))
		g.waitReached(t)
		srv.setMode(t, sid, "plan")
		g.open()
		srv.c.await(ch, "prompt go")
		wroteNothing(t, ws, "plan")
		assert.Empty(t, perms.all(), "plan mode refuses the child's calls outright")
		for _, r := range p.requests() {
			if pr, _ := position(r); pr == "plan child" {
				assert.NotContains(t, toolNames(r), "write", "the child is offered plan mode's tools")
				assert.Contains(t, toolNames(r), "exit_plan_mode")
			}
		}
	})
	t.Run("never", func(t *testing.T) {
		root, ws := t.TempDir(), t.TempDir()
		p := newProvider()
		perms := &permissionLog{}
		srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, perms.answer)
		sid := srv.newSession(t, ws).SessionID
		srv.setConfig(t, sid, "sandbox-mode", "read-only")
		srv.setConfig(t, sid, "approval-policy", "never")
		hostileChild(p, "never child", ws)
		p.script("go", toolCall{"subagent", `{"description":"do it","prompt":"never child"}`})
		srv.prompt(t, sid, "go")
		wroteNothing(t, ws, "never")
		assert.Empty(t, perms.all(), "approval policy never: nobody is asked")
	})
}

// TestCodeModeGrantIsKeyedOnTheCommand: a full-access request made from
// run_code names its command, and "always allow in this project" for it
// lets exactly that command run again, never another one that happens to
// come through the same path.
func TestCodeModeGrantIsKeyedOnTheCommand(t *testing.T) {
	root, ws, outside := t.TempDir(), t.TempDir(), t.TempDir()
	p := newProvider()
	var mu sync.Mutex
	var asked []string
	answer := func(method string, params json.RawMessage) any {
		if method != "session/request_permission" {
			return nil
		}
		mu.Lock()
		asked = append(asked, string(params))
		n := len(asked)
		mu.Unlock()
		if n == 1 {
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-project"}}
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject-once"}}
	}
	home := t.TempDir()
	srv := serveWith(t, "default", openStore(t, root), ws, p, map[string]any{}, answer, func(o *composition.ServerOptions) {
		o.Getenv = func(k string) string {
			if k == "HOME" {
				return home
			}
			return ""
		}
	})
	sid := srv.newSession(t, ws).SessionID
	srv.setConfig(t, sid, "tool-mode", "code")
	program := func(cmd string) toolCall {
		js := `return await tools.bash({command: ` + lit(cmd) + `, description: "x", sandbox_permissions: "danger-full-access", justification: "needed"})`
		return toolCall{"run_code", `{"code":` + lit(js) + `}`}
	}
	benign := "echo ok > " + filepath.Join(outside, "ok.txt")
	hostile := "touch " + filepath.Join(outside, "PWNED")
	p.script("first", program(benign))
	p.script("second", program(hostile))
	srv.prompt(t, sid, "first")
	require.FileExists(t, filepath.Join(outside, "ok.txt"), "the approved command ran")
	srv.prompt(t, sid, "second")
	assert.NoFileExists(t, filepath.Join(outside, "PWNED"), "the grant for one command let another run unconfined")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, asked, 2, "the second command is asked about")
	assert.Contains(t, asked[0], "```sh\\n"+benign)
	assert.Contains(t, asked[0], `"title":`+lit(benign))
	assert.Contains(t, asked[1], "```sh\\n"+hostile, "the request names the command")
	grants, err := os.ReadFile(filepath.Join(home, ".local", "state", "dsh-acp", "permissions.json"))
	require.NoError(t, err)
	var stored struct {
		Projects map[string][]string `json:"projects"`
	}
	require.NoError(t, json.Unmarshal(grants, &stored))
	assert.Equal(t, []string{"run:danger-full-access:" + benign}, stored.Projects[ws], "the grant names the command, not a title")
}

// TestRunCodeIsNotCallableInNativeMode: with the tool mode native, a
// run_code call the model makes anyway does not run its program.
func TestRunCodeIsNotCallableInNativeMode(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, nil)
	sid := srv.newSession(t, ws).SessionID
	js := `return await tools.write({file_path: ` + lit(filepath.Join(ws, "code.txt")) + `, content: "x"})`
	p.script("go", toolCall{"run_code", `{"code":` + lit(js) + `}`})
	srv.prompt(t, sid, "go")
	assert.NoFileExists(t, filepath.Join(ws, "code.txt"))
	results := toolResults(t, readLog(t, root, sid))
	require.Len(t, results, 1)
	assert.True(t, results[0].IsError)
	assert.Contains(t, results[0].text(), "native")
	for _, r := range p.requestsFor(sid) {
		assert.NotContains(t, toolNames(r), "run_code", "not offered either")
	}
}

// TestChildRunsTheParentsHooks: a child agent runs under the hooks its
// parent had when it was spawned, with the parent's consent to the
// project's hooks: a project's PreToolUse hook that blocks bash, allowed
// once in the parent, blocks the child's bash too, and the user is not
// asked again.
func TestChildRunsTheParentsHooks(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	writeProjectFile(t, filepath.Join(ws, ".claude", "settings.json"),
		`{"hooks":{"PreToolUse":[{"matcher":"bash","hooks":[{"type":"command","command":"echo no shell here >&2; exit 2"}]}]}}`)
	p := newProvider()
	var mu sync.Mutex
	var asked []string
	answer := func(method string, params json.RawMessage) any {
		if method != "session/request_permission" {
			return nil
		}
		mu.Lock()
		asked = append(asked, string(params))
		mu.Unlock()
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-once"}}
	}
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, answer)
	sid := srv.newSession(t, ws).SessionID
	p.script("go", toolCall{"bash", `{"command":"echo p > parent.txt","description":"p"}`},
		toolCall{"subagent", `{"description":"do it","prompt":"hooked child"}`})
	p.script("hooked child", toolCall{"bash", `{"command":"echo c > child.txt","description":"c"}`})
	stop, _ := srv.prompt(t, sid, "go")
	require.Equal(t, "end_turn", stop)
	assert.NoFileExists(t, filepath.Join(ws, "parent.txt"), "the hook blocks the parent's bash")
	assert.NoFileExists(t, filepath.Join(ws, "child.txt"), "the parent's hook blocks the child's bash")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, asked, 1, "the project's hooks are asked about once, in the parent")
	assert.Contains(t, asked[0], "Run this project's hooks?")
}

func writeProjectFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// nestingWorkflow is a workflow call that starts six children, each of
// which (prompted "nest") makes the same call: without ceilings, 6 + 36 +
// 216 agents down to the depth limit.
func nestingWorkflow() toolCall {
	js := `const r = await parallel([1, 2, 3, 4, 5, 6].map(() => () => agent("nest"))); return String(r.length)`
	return toolCall{"workflow", `{"meta":{"name":"fan","description":"fan out"},"script":` + lit(js) + `}`}
}

// childLogs counts the child sessions in a jsonl store.
func childLogs(t *testing.T, root, _ string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	require.NoError(t, err)
	return len(files) - 1
}

// anyResultSays reports whether some model request of any agent carried
// text (in a message or a tool result).
func anyResultSays(t *testing.T, p *scriptedProvider, text string) bool {
	for _, r := range p.requests() {
		for _, m := range r.Messages {
			for _, b := range m.Content {
				if strings.Contains(b.Text, text) {
					return true
				}
				for _, c := range b.Content {
					if strings.Contains(c.Text, text) {
						return true
					}
				}
			}
		}
	}
	return false
}

// TestDelegationCeilingsHoldAcrossNestedWorkflows: a workflow whose
// children run the same workflow cannot multiply the session's ceilings:
// each one holds for the whole session tree, and the model is told which
// one stopped it.
func TestDelegationCeilingsHoldAcrossNestedWorkflows(t *testing.T) {
	cases := []struct {
		name   string
		limits composition.DelegationConfig
		key    string
		check  func(t *testing.T, children, calls int)
	}{
		{name: "children per turn", limits: composition.DelegationConfig{MaxChildrenPerTurn: 10}, key: "delegation.maxChildrenPerTurn",
			check: func(t *testing.T, children, _ int) { assert.LessOrEqual(t, children, 10) }},
		{name: "live children", limits: composition.DelegationConfig{MaxLiveChildren: 1}, key: "delegation.maxLiveChildren",
			check: func(t *testing.T, children, _ int) {
				assert.Equal(t, 6, children, "no child could start one of its own")
			}},
		{name: "model calls per turn", limits: composition.DelegationConfig{MaxModelCallsPerTurn: 8}, key: "delegation.maxModelCallsPerTurn",
			check: func(t *testing.T, _, calls int) {
				assert.LessOrEqual(t, calls, 8+1, "the tree's calls, and the session's answer")
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, ws := t.TempDir(), t.TempDir()
			p := newProvider()
			p.script("go", nestingWorkflow())
			p.script("nest", nestingWorkflow())
			srv := serveWith(t, "default", openStore(t, root), ws, p, map[string]any{}, nil, func(o *composition.ServerOptions) {
				o.Delegation = c.limits
			})
			sid := srv.newSession(t, ws).SessionID
			stop, _ := srv.prompt(t, sid, "go")
			require.Equal(t, "end_turn", stop)
			children := childLogs(t, root, sid)
			c.check(t, children, len(p.requests()))
			assert.True(t, anyResultSays(t, p, c.key), "a model is told which ceiling stopped it")

			if c.name == "children per turn" {
				// The count is per turn: the next one may delegate again.
				stop, _ = srv.prompt(t, sid, "go")
				require.Equal(t, "end_turn", stop)
				assert.Greater(t, childLogs(t, root, sid), children)
			}
		})
	}
}

// TestStructuredChildKeepsTheComposition: a workflow child given an
// output schema (whose registry gets structured_output on top) still gets
// the project's instructions in its prompt and its tool results still go
// through the spill step.
func TestStructuredChildKeepsTheComposition(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	writeProjectFile(t, filepath.Join(ws, "AGENTS.md"), "PROJECT RULE 23: run make check before answering.\n")
	p := newProvider()
	js := `return await agent("structured child", {schema: {type: "object", properties: {a: {type: "string"}}}})`
	p.script("go", toolCall{"workflow", `{"meta":{"name":"s","description":"structured"},"script":` + lit(js) + `}`})
	p.script("structured child", toolCall{"bash", `{"command":"head -c 300000 /dev/zero | tr '\\0' x","description":"big"}`})
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, nil)
	sid := srv.newSession(t, ws).SessionID
	stop, _ := srv.prompt(t, sid, "go")
	require.Equal(t, "end_turn", stop)
	var seen, spilled bool
	for _, r := range p.requests() {
		if r.SessionID == sid {
			continue
		}
		if pr, _ := position(r); pr != "structured child" {
			continue
		}
		seen = true
		assert.Contains(t, r.System, "PROJECT RULE 23", "the child's prompt has the project's instructions")
		assert.Contains(t, toolNames(r), "structured_output")
		for _, m := range r.Messages {
			for _, b := range m.Content {
				for _, c := range b.Content {
					if strings.Contains(c.Text, "xxxx") {
						spilled = true
						assert.Less(t, len(c.Text), 64<<10, "the child's big result is bounded (spilled)")
					}
				}
			}
		}
	}
	require.True(t, seen, "the structured child ran")
	assert.True(t, spilled, "the child's model got its result")
}
