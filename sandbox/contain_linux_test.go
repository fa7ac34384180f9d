//go:build linux

package sandbox

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/netsink"
)

// listener is a loopback listener counting what confined commands send.
type listener struct{ *netsink.Sink }

func listen(t *testing.T) listener { return listener{netsink.New(t, nil)} }

func (l listener) port() string {
	return strings.TrimPrefix(l.Addr(), "127.0.0.1:")
}

// sendScript writes a payload to the listener with bash's /dev/tcp.
func (l listener) sendScript() string {
	return "exec 3<>/dev/tcp/127.0.0.1/" + l.port() + " && printf SECRET >&3 && exec 3>&-"
}

// TestNoNetwork: with NoNetwork, a confined command reaches no host
// listener (0 connections, 0 bytes) and the failure reads as a network
// denial; without it, the same command delivers its bytes.
func TestNoNetwork(t *testing.T) {
	for _, bc := range realBackends {
		t.Run(bc.name, func(t *testing.T) {
			b := bc.new(t)
			f := newEscapeFixture(t)
			for _, mode := range []Mode{ReadOnly, WorkspaceWrite} {
				l := listen(t)
				policy := Policy{Mode: mode, WorkspaceRoot: f.root, NoNetwork: true}
				c, err := providerFor(b).Confine(context.Background(), []string{"bash", "-c", l.sendScript()}, policy)
				requireBackend(t, b)
				if err != nil {
					t.Fatal(err)
				}
				r := run(t, spawn{argv: c.Argv, setup: c.Setup}, f.root)
				if r.code == 0 || l.Conns.Load() != 0 || l.Bytes.Load() != 0 {
					t.Fatalf("%s: exit %d, %d connections, %d bytes (stderr %q)", mode, r.code, l.Conns.Load(), l.Bytes.Load(), r.stderr)
				}
				if v := c.Classify(r.code, r.stderr); !v.NetDenied || v.Denied || v.RunnerFailure {
					t.Fatalf("%s: stderr %q: verdict %+v, want a network denial", mode, r.stderr, v)
				}
				// The same command with the network on gets through.
				policy.NoNetwork = false
				r = run(t, confinePolicy(t, b, policy, l.sendScript()), f.root)
				expectOK(t, b, r)
				deadline := time.Now().Add(5 * time.Second)
				for l.Bytes.Load() < 6 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if l.Bytes.Load() != 6 {
					t.Fatalf("%s with network: %d bytes arrived, want 6", mode, l.Bytes.Load())
				}
			}
		})
	}
}

// TestNoNetworkSubreaperTCP: the Landlock helper outside namespaces denies
// TCP by rule (ABI 4+).
func TestNoNetworkRuleOnly(t *testing.T) {
	b := &Landlock{Launcher: testLauncher(t), NoNamespaces: true}
	requireBackend(t, b)
	l := listen(t)
	f := newEscapeFixture(t)
	script := "python3 -c 'import socket; s=socket.create_connection((\"127.0.0.1\", " + l.port() + ")); s.sendall(b\"x\")'"
	if _, err := exec.LookPath("python3"); err != nil {
		script = l.sendScript()
	}
	r := run(t, confinePolicy(t, b, Policy{Mode: WorkspaceWrite, WorkspaceRoot: f.root, NoNetwork: true}, script), f.root)
	if r.code == 0 || l.Conns.Load() != 0 {
		t.Fatalf("exit %d, %d connections (stderr %q)", r.code, l.Conns.Load(), r.stderr)
	}
}

// containFixture is a home with secrets and a workspace beneath it (the
// user opened the home) holding a git repository.
type containFixture struct {
	home, ws, key, netrc, state string
}

func newContainFixture(t *testing.T) containFixture {
	t.Helper()
	base := testBase(t)
	f := containFixture{home: filepath.Join(base, "home")}
	f.ws = filepath.Join(f.home, "proj")
	f.key = filepath.Join(f.home, ".ssh", "id_rsa")
	f.netrc = filepath.Join(f.home, ".netrc")
	f.state = filepath.Join(f.home, ".local", "state", "dsh-acp")
	for _, d := range []string{filepath.Dir(f.key), f.ws, f.state, filepath.Join(f.ws, ".git", "hooks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, body := range map[string]string{f.key: "PRIVATE KEY\n", f.netrc: "machine x password hunter2\n",
		filepath.Join(f.state, "permissions.json"): "{}\n", filepath.Join(f.home, "notes.txt"): "notes\n",
		filepath.Join(f.ws, ".git", "config"): "[core]\n", filepath.Join(f.ws, "main.go"): "package main\n"} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f containFixture) policy(mode Mode, root string) Policy {
	return Policy{Mode: mode, WorkspaceRoot: root, Hidden: []string{filepath.Dir(f.key), f.netrc, f.state},
		Protected: []string{filepath.Join(f.ws, ".git", "hooks"), filepath.Join(f.ws, ".git", "config")}}
}

// TestHidden: secrets read as nothing, whatever the mode and even when
// the workspace root is the home that holds them; the agent's state dir
// cannot be written; everything else reads as before.
func TestHidden(t *testing.T) {
	for _, bc := range realBackends {
		t.Run(bc.name, func(t *testing.T) {
			b := bc.new(t)
			f := newContainFixture(t)
			for _, root := range []string{f.ws, f.home} {
				for _, mode := range []Mode{ReadOnly, WorkspaceWrite} {
					p := f.policy(mode, root)
					// Unmounting what covers them (no capability allows it)
					// shows nothing either.
					r := run(t, confinePolicy(t, b, p, "umount -l "+filepath.Dir(f.key)+" "+f.netrc+" 2>/dev/null; cat "+f.key+" "+f.netrc+" 2>/dev/null; cat "+filepath.Join(f.home, "notes.txt")), f.ws)
					if strings.Contains(r.stdout, "PRIVATE") || strings.Contains(r.stdout, "hunter2") || !strings.Contains(r.stdout, "notes") {
						t.Fatalf("%s root %s: stdout %q stderr %q", mode, root, r.stdout, r.stderr)
					}
					perm := filepath.Join(f.state, "permissions.json")
					_ = run(t, confinePolicy(t, b, p, "echo '{\"pwned\":1}' > "+perm+"; echo x > "+filepath.Join(f.state, "new.json")), f.ws)
					if got, _ := os.ReadFile(perm); string(got) != "{}\n" || exists(filepath.Join(f.state, "new.json")) {
						t.Fatalf("%s root %s: the state dir was written: %q", mode, root, got)
					}
				}
			}
		})
	}
}

// TestProtected: under workspace-write, .git/hooks and .git/config cannot
// be written (bwrap and the Landlock helper in namespaces refuse the
// write; as a subreaper the tripwire puts them back when the command
// ends, and says so) while a git commit in the workspace succeeds and
// trips nothing.
func TestProtected(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, bc := range realBackends {
		t.Run(bc.name, func(t *testing.T) {
			b := bc.new(t)
			f := newContainFixture(t)
			if out, err := exec.Command("git", "init", "-q", f.ws).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v %s", err, out)
			}
			p := f.policy(WorkspaceWrite, f.ws)
			p.Quarantine = filepath.Join(testBase(t), "quarantine")
			hook := filepath.Join(f.ws, ".git", "hooks", "pre-commit")
			cfg := filepath.Join(f.ws, ".git", "config")
			before, _ := os.ReadFile(cfg)
			c := confineFull(t, b, p, "printf '#!/bin/sh\\ntouch PWNED\\n' > "+hook+"; chmod +x "+hook+"; git config core.fsmonitor 'touch PWNED'; echo '[alias] x = !touch PWNED' >> "+cfg)
			r := run(t, spawn{argv: c.Argv, setup: c.Setup}, f.ws)
			tripped := c.Tripwire.Check()
			if exists(hook) {
				t.Fatalf("the hook was written (stderr %q)", r.stderr)
			}
			if after, _ := os.ReadFile(cfg); string(after) != string(before) {
				t.Fatalf(".git/config changed: %q", after)
			}
			if bc.namespaces(b) != (len(tripped) == 0) {
				t.Fatalf("tripwire reported %q (namespaces %v)", tripped, bc.namespaces(b))
			}
			if len(tripped) > 0 {
				// What was put back is kept.
				kept := false
				_ = filepath.WalkDir(p.Quarantine, func(path string, d os.DirEntry, err error) error {
					if d != nil && d.Name() == "pre-commit" {
						data, _ := os.ReadFile(path)
						kept = strings.Contains(string(data), "PWNED")
					}
					return nil
				})
				if !kept {
					t.Fatal("the planted hook is not in the quarantine")
				}
			}
			c = confineFull(t, b, p, "git add main.go && git -c user.name=t -c user.email=t@t commit -qm one && git log --oneline | wc -l")
			r = run(t, spawn{argv: c.Argv, setup: c.Setup}, f.ws)
			expectOK(t, b, r)
			if strings.TrimSpace(r.stdout) != "1" {
				t.Fatalf("git commit: stdout %q stderr %q", r.stdout, r.stderr)
			}
			if tripped := c.Tripwire.Check(); len(tripped) != 0 {
				t.Fatalf("a commit tripped the tripwire: %q", tripped)
			}
		})
	}
}

// A protected path missing from the workspace root (.envrc, .zed, .codex,
// .claude/settings*.json) leaves nothing on the host before a command
// runs, and if a command creates it, it is gone once the check ran (and
// reported), on every backend; what the command created beside it stays.
func TestMissingProtected(t *testing.T) {
	for _, bc := range realBackends {
		t.Run(bc.name, func(t *testing.T) {
			b := bc.new(t)
			f := newContainFixture(t)
			p := Policy{Mode: WorkspaceWrite, WorkspaceRoot: f.ws}
			for _, rel := range []string{".envrc", ".zed", ".codex", ".claude/settings*.json"} {
				p.Protected = append(p.Protected, filepath.Join(f.ws, rel))
			}
			c := confineFull(t, b, p, "echo 'export X=1' > .envrc; mkdir -p .zed .codex .claude/commands; echo '{}' > .zed/settings.json; "+
				"echo 'x' > .codex/config.toml; echo '{}' > .claude/settings.local.json; echo hi > .claude/commands/ok.md; echo ok > kept.txt")
			for _, rel := range []string{".envrc", ".zed", ".codex", ".claude"} {
				if exists(filepath.Join(f.ws, rel)) {
					t.Fatalf("%s exists before the command ran", rel)
				}
			}
			r := run(t, spawn{argv: c.Argv, setup: c.Setup}, f.ws)
			expectOK(t, b, r)
			tripped := c.Tripwire.Check()
			for _, rel := range []string{".envrc", ".zed", ".codex", ".claude/settings.local.json"} {
				if exists(filepath.Join(f.ws, rel)) {
					t.Fatalf("%s is still there after the check (tripped %q)", rel, tripped)
				}
			}
			if len(tripped) != 4 {
				t.Fatalf("tripped %q, want the 4 paths", tripped)
			}
			for _, rel := range []string{"kept.txt", ".claude/commands/ok.md"} {
				if !exists(filepath.Join(f.ws, rel)) {
					t.Fatalf("%s was removed", rel)
				}
			}
			// A link that appears where the pattern's directory was missing
			// is removed as well, and what it points to is left alone.
			outside := filepath.Join(testBase(t), "claude")
			if err := os.MkdirAll(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outside, "settings.json"), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(f.ws, ".claude")); err != nil {
				t.Fatal(err)
			}
			c = confineFull(t, b, p, "ln -s "+outside+" .claude")
			expectOK(t, b, run(t, spawn{argv: c.Argv, setup: c.Setup}, f.ws))
			if tripped := c.Tripwire.Check(); len(tripped) != 1 || exists(filepath.Join(f.ws, ".claude")) || !exists(filepath.Join(outside, "settings.json")) {
				t.Fatalf("tripped %q", tripped)
			}
		})
	}
}

// The subreaper's tripwire cannot be turned against the host: a command
// that replaced .git/hooks by a link to a directory outside the
// workspace gets the hooks back, and nothing outside is written or
// removed.
func TestTripwireFollowsNoLinkOut(t *testing.T) {
	b := &Landlock{Launcher: testLauncher(t), NoNamespaces: true}
	requireBackend(t, b)
	f := newContainFixture(t)
	outside := filepath.Join(testBase(t), "victim")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(f.ws, ".git", "hooks")
	if err := os.WriteFile(filepath.Join(hooks, "pre-commit.sample"), []byte("sample"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := confineFull(t, b, f.policy(WorkspaceWrite, f.ws), "mv "+hooks+" "+hooks+".old && ln -s "+outside+" "+hooks)
	expectOK(t, b, run(t, spawn{argv: c.Argv, setup: c.Setup}, f.ws))
	if tripped := c.Tripwire.Check(); len(tripped) != 1 {
		t.Fatalf("tripped %q", tripped)
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "precious")); string(got) != "mine" || exists(filepath.Join(outside, "pre-commit.sample")) {
		t.Fatalf("the check wrote outside: precious %q", got)
	}
	if fi, err := os.Lstat(hooks); err != nil || !fi.IsDir() {
		t.Fatalf(".git/hooks not restored: %v %v", fi, err)
	}
	if got, _ := os.ReadFile(filepath.Join(hooks, "pre-commit.sample")); string(got) != "sample" {
		t.Fatalf("sample hook %q", got)
	}
}

// confineFull is confinePolicy returning the whole Confined.
func confineFull(t *testing.T, b Backend, policy Policy, script string) Confined {
	t.Helper()
	requireBackend(t, b)
	c, err := providerFor(b).Confine(context.Background(), []string{"bash", "-c", script}, policy)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNoNetworkUDP: where the command gets its own network namespace
// (bwrap, the Landlock helper in namespaces), no datagram reaches a host
// UDP socket either. (The Landlock subreaper leaves UDP open below ABI
// 10: docs/security.md.)
func TestNoNetworkUDP(t *testing.T) {
	for _, bc := range realBackends {
		t.Run(bc.name, func(t *testing.T) {
			b := bc.new(t)
			requireBackend(t, b)
			if !bc.namespaces(b) {
				t.Skip("no network namespace as a subreaper: UDP is denied by rule only from Landlock ABI 10")
			}
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			f := newEscapeFixture(t)
			port := strings.TrimPrefix(pc.LocalAddr().String(), "127.0.0.1:")
			r := run(t, confinePolicy(t, b, Policy{Mode: WorkspaceWrite, WorkspaceRoot: f.root, NoNetwork: true},
				"echo LEAK > /dev/udp/127.0.0.1/"+port), f.root)
			_ = pc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			buf := make([]byte, 64)
			if n, _, err := pc.ReadFrom(buf); err == nil {
				t.Fatalf("a datagram arrived: %q (exit %d, stderr %q)", buf[:n], r.code, r.stderr)
			}
			// The same without containment arrives (the test can fail).
			r = run(t, confinePolicy(t, b, Policy{Mode: WorkspaceWrite, WorkspaceRoot: f.root}, "echo OK > /dev/udp/127.0.0.1/"+port), f.root)
			_ = pc.SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, _, err := pc.ReadFrom(buf); err != nil || !strings.Contains(string(buf[:n]), "OK") {
				t.Fatalf("with the network on: %v %q (stderr %q)", err, buf[:n], r.stderr)
			}
		})
	}
}
