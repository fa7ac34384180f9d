//go:build linux

package bash

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// The session's extra workspace roots are writable like its root under
// workspace-write, read-only under read-only, on every backend; a
// directory that is no root stays read-only.
func TestExtraRootsAreWorkspaceRoots(t *testing.T) {
	for _, b := range suiteBackends(t) {
		for _, mode := range []string{"workspace-write", "read-only"} {
			t.Run(b.name+"/"+mode, func(t *testing.T) {
				l := newTerminalLab(t, b, mode)
				extra := filepath.Join(filepath.Dir(l.ws), "extra")
				require.NoError(t, os.Mkdir(extra, 0o755))
				// Local runs, the host gives only the roots.
				l.env.host = &capabilities.Host{Roots: []string{extra}}
				o := l.bash(context.Background(), "c1", "echo x > "+filepath.Join(extra, "f")+"; echo y > "+filepath.Join(l.outside, "f"), nil)
				require.False(t, o.IsError, "%+v", o.Content)
				if mode == "workspace-write" {
					require.FileExists(t, filepath.Join(extra, "f"))
				} else {
					require.NoFileExists(t, filepath.Join(extra, "f"))
				}
				require.NoFileExists(t, filepath.Join(l.outside, "f"))
				require.Contains(t, o.Content[0].Text, "[sandbox: file access denied under "+mode+" mode]")
			})
		}
	}
}
