//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// Under workspace-write the extra workspace roots are writable like the
// root; a directory beside them stays read-only, and read-only keeps every
// root read-only.
func TestExtraRootsAreWritableUnderWorkspaceWrite(t *testing.T) {
	for _, bc := range realBackends {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			b := bc.new(t)
			requireBackend(t, b)
			base := testBase(t)
			root, extra, beside := filepath.Join(base, "root"), filepath.Join(base, "extra"), filepath.Join(base, "beside")
			for _, d := range []string{root, extra, beside} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			ww := Policy{Mode: WorkspaceWrite, WorkspaceRoot: root, ExtraRoots: []string{extra}}
			expectOK(t, b, run(t, confinePolicy(t, b, ww, "echo x > "+extra+"/f && echo y > "+root+"/g"), root))
			if !exists(filepath.Join(extra, "f")) || !exists(filepath.Join(root, "g")) {
				t.Fatal("the roots were not written")
			}
			expectDenied(t, b, run(t, confinePolicy(t, b, ww, "echo x > "+beside+"/f"), root))
			ro := Policy{Mode: ReadOnly, WorkspaceRoot: root, ExtraRoots: []string{extra}}
			expectDenied(t, b, run(t, confinePolicy(t, b, ro, "echo x > "+extra+"/h"), root))
			if exists(filepath.Join(beside, "f")) || exists(filepath.Join(extra, "h")) {
				t.Fatal("written outside the writable roots")
			}
		})
	}
}

// An extra root removed since the session opened does not break the
// session's commands: it is left out, the other roots stay writable.
func TestMissingExtraRootIsLeftOut(t *testing.T) {
	for _, bc := range realBackends {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			b := bc.new(t)
			requireBackend(t, b)
			base := testBase(t)
			root, extra, gone := filepath.Join(base, "root"), filepath.Join(base, "extra"), filepath.Join(base, "gone")
			for _, d := range []string{root, extra} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, mode := range []Mode{WorkspaceWrite, ReadOnly} {
				p := Policy{Mode: mode, WorkspaceRoot: root, ExtraRoots: []string{gone, extra}}
				expectOK(t, b, run(t, confinePolicy(t, b, p, "true"), root))
			}
			ww := Policy{Mode: WorkspaceWrite, WorkspaceRoot: root, ExtraRoots: []string{gone, extra}}
			expectOK(t, b, run(t, confinePolicy(t, b, ww, "echo x > "+extra+"/f"), root))
			if !exists(filepath.Join(extra, "f")) {
				t.Fatal("the remaining extra root was not written")
			}
			if exists(gone) {
				t.Fatal("the missing root was created")
			}
		})
	}
}
