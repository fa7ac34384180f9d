//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkTrue measures the cost of spawning `true` unconfined and
// confined by each backend in read-only and workspace-write mode (and with
// a session temp dir, and with the default composition's containment: no
// network, the built-in secrets hidden, a repository's files that run code
// later protected), spawned as the bash tool spawns it: a session leader
// with a parent-death signal, prepared by Confined.Setup.
func BenchmarkTrue(b *testing.B) {
	hidden, protected, root, tmp := benchContainment(b)
	b.Run("unconfined", func(b *testing.B) { benchArgv(b, spawn{argv: []string{"true"}}) })
	for _, bc := range realBackends {
		be := bc.new(b)
		for _, policy := range []Policy{
			{Mode: ReadOnly, WorkspaceRoot: root},
			{Mode: WorkspaceWrite, WorkspaceRoot: root},
			{Mode: WorkspaceWrite, WorkspaceRoot: root, TmpDir: tmp},
			{Mode: WorkspaceWrite, WorkspaceRoot: root, TmpDir: tmp, NoNetwork: true, Hidden: hidden, Protected: protected},
		} {
			name := bc.name + "/" + string(policy.Mode)
			if policy.TmpDir != "" {
				name += "+tmp"
			}
			if policy.NoNetwork {
				name += "+contain"
			}
			b.Run(name, func(b *testing.B) {
				requireBackend(b, be)
				c, err := providerFor(be).Confine(context.Background(), []string{"true"}, policy)
				if err != nil {
					b.Fatal(err)
				}
				benchArgv(b, spawn{argv: c.Argv, setup: c.Setup})
			})
		}
	}
}

// BenchmarkContainmentCost measures, in one run and alternating command
// by command, what the containment adds to a confined `true` under
// workspace-write with the session /tmp: Confine (the agent's side: the
// hidden and protected paths resolved, a Landlock ruleset checked or
// built) and the spawn, with and without the containment of
// BenchmarkTrue, and the tripwire's check after each command. It reports both sides and their difference, in wall and
// in CPU time (the command's and the agent's: `contain-delta-ms/op`,
// `contain-delta-cpu-ms/op`); the budget is +1 ms per command.
func BenchmarkContainmentCost(b *testing.B) {
	hidden, protected, root, tmp := benchContainment(b)
	for _, bc := range realBackends {
		be := bc.new(b)
		b.Run(bc.name, func(b *testing.B) {
			requireBackend(b, be)
			prov := providerFor(be)
			base := Policy{Mode: WorkspaceWrite, WorkspaceRoot: root, TmpDir: tmp}
			contain := base
			contain.NoNetwork, contain.Hidden, contain.Protected = true, hidden, protected
			var wall, cpu [2]time.Duration
			for b.Loop() {
				for i, p := range []Policy{base, contain} {
					t0, self := time.Now(), selfCPU()
					c, err := prov.Confine(context.Background(), []string{"true"}, p)
					if err != nil {
						b.Fatal(err)
					}
					cmdCPU := spawnOnce(b, spawn{argv: c.Argv, setup: c.Setup})
					if tripped := c.Tripwire.Check(); len(tripped) > 0 {
						b.Fatalf("tripped %q", tripped)
					}
					cpu[i] += selfCPU() - self + cmdCPU
					wall[i] += time.Since(t0)
				}
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(ms(wall[0]), "plain-ms/op")
			b.ReportMetric(ms(wall[1]), "contain-ms/op")
			b.ReportMetric(ms(wall[1]-wall[0]), "contain-delta-ms/op")
			b.ReportMetric(ms(cpu[1]-cpu[0]), "contain-delta-cpu-ms/op")
		})
	}
}

// benchContainment makes BenchmarkTrue's fixture: a fake home with the
// built-in secrets, and a workspace whose repository has hooks and a
// config.
func benchContainment(b *testing.B) (hidden, protected []string, root, tmp string) {
	root, tmp = b.TempDir(), b.TempDir()
	// The home lies outside the busy /tmp, as a real one does (each
	// change to a directory on the way to a secret rebuilds a Landlock
	// subreaper's ruleset).
	home, err := os.MkdirTemp("/var/tmp", "dsh-bench-home-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(home) })
	for _, d := range []string{".ssh", ".gnupg", ".aws", ".kube", ".config/gh", ".config/dsh-acp", ".local/state/dsh-acp"} {
		p := filepath.Join(home, d)
		if err := os.MkdirAll(p, 0o700); err != nil {
			b.Fatal(err)
		}
		hidden = append(hidden, p)
	}
	for _, f := range []string{".netrc", ".git-credentials", ".npmrc"} {
		p := filepath.Join(home, f)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			b.Fatal(err)
		}
		hidden = append(hidden, p)
	}
	if err := os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n\tbare = false\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	// What git init puts in .git/hooks: 14 samples, about 24 kB.
	for i := range 14 {
		if err := os.WriteFile(filepath.Join(root, ".git", "hooks", fmt.Sprintf("hook-%d.sample", i)), bytes.Repeat([]byte("#\n"), 850), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	protected = []string{filepath.Join(root, ".git", "hooks"), filepath.Join(root, ".git", "config")}
	// The root-level paths a fresh repository lacks (the tripwire's).
	for _, rel := range []string{".zed", ".vscode/settings.json", ".vscode/tasks.json", ".claude/settings*.json", ".codex", ".envrc"} {
		protected = append(protected, filepath.Join(root, rel))
	}
	return hidden, protected, root, tmp
}

// selfCPU is the benchmark process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// spawnOnce runs s as the bash tool spawns a command and returns its CPU
// time.
func spawnOnce(b *testing.B, s spawn) time.Duration {
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if s.setup != nil {
		s.setup(cmd)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%q: %v: %s", s.argv, err, out)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func benchArgv(b *testing.B, s spawn) {
	path, err := exec.LookPath(s.argv[0])
	if err != nil {
		b.Fatal(err)
	}
	env := os.Environ()
	var cpu time.Duration // the sandbox's own CPU time, steadier than wall time on a loaded host
	for b.Loop() {
		cmd := exec.Command(path, s.argv[1:]...)
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		if s.setup != nil {
			s.setup(cmd)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%q: %v: %s", s.argv, err, out)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkContainmentAgentSide measures the agent's side of a confined
// `true` alone, per backend, without and with the containment of
// [BenchmarkContainmentCost]: [Provider.Confine], then the tripwire's
// check, nothing spawned.
func BenchmarkContainmentAgentSide(b *testing.B) {
	hidden, protected, root, tmp := benchContainment(b)
	for _, bc := range realBackends {
		be := bc.new(b)
		base := Policy{Mode: WorkspaceWrite, WorkspaceRoot: root, TmpDir: tmp}
		contain := base
		contain.NoNetwork, contain.Hidden, contain.Protected = true, hidden, protected
		for name, p := range map[string]Policy{"plain": base, "contain": contain} {
			b.Run(bc.name+"/"+name, func(b *testing.B) {
				requireBackend(b, be)
				prov := providerFor(be)
				for b.Loop() {
					c, err := prov.Confine(context.Background(), []string{"true"}, p)
					if err != nil {
						b.Fatal(err)
					}
					if tripped := c.Tripwire.Check(); len(tripped) > 0 {
						b.Fatalf("tripped %q", tripped)
					}
				}
			})
		}
	}
}
