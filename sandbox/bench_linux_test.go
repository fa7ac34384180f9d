//go:build linux

package sandbox

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkTrue measures the cost of spawning `true` unconfined and
// confined by each backend in read-only and workspace-write mode.
func BenchmarkTrue(b *testing.B) {
	root := b.TempDir()
	b.Run("unconfined", func(b *testing.B) { benchArgv(b, []string{"true"}) })
	for _, bc := range realBackends {
		for _, mode := range []Mode{ReadOnly, WorkspaceWrite} {
			b.Run(bc.name+"/"+string(mode), func(b *testing.B) {
				be := bc.new(b)
				requireBackend(b, be)
				c, err := NewProvider(be).Confine(context.Background(), []string{"true"}, Policy{Mode: mode, WorkspaceRoot: root})
				if err != nil {
					b.Fatal(err)
				}
				benchArgv(b, c.Argv)
			})
		}
	}
}

func benchArgv(b *testing.B, argv []string) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if out, err := exec.Command(path, argv[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%q: %v: %s", argv, err, out)
		}
	}
}
