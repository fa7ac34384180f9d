//go:build linux

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// BenchmarkTrue measures the cost of spawning `true` unconfined and
// confined by each backend in read-only and workspace-write mode (and with
// a session temp dir), spawned as the bash tool spawns it: a session
// leader with a parent-death signal, prepared by Confined.Setup.
func BenchmarkTrue(b *testing.B) {
	root := b.TempDir()
	tmp := b.TempDir()
	b.Run("unconfined", func(b *testing.B) { benchArgv(b, spawn{argv: []string{"true"}}) })
	for _, bc := range realBackends {
		be := bc.new(b)
		for _, policy := range []Policy{
			{Mode: ReadOnly, WorkspaceRoot: root},
			{Mode: WorkspaceWrite, WorkspaceRoot: root},
			{Mode: WorkspaceWrite, WorkspaceRoot: root, TmpDir: tmp},
		} {
			name := bc.name + "/" + string(policy.Mode)
			if policy.TmpDir != "" {
				name += "+tmp"
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
	}
}
