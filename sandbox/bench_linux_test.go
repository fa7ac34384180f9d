//go:build linux

package sandbox

import (
	"context"
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
	root := b.TempDir()
	tmp := b.TempDir()
	home := b.TempDir()
	var hidden []string
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
	if err := os.WriteFile(filepath.Join(root, ".git", "config"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	protected := []string{filepath.Join(root, ".git", "hooks"), filepath.Join(root, ".git", "config")}
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
