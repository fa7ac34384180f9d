//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSessionTmpDir checks Policy.TmpDir on every backend and mode: the
// command's TMPDIR holds what the session wrote before, nothing lands in
// the host's /tmp, and a workspace beneath /tmp stays visible.
func TestSessionTmpDir(t *testing.T) {
	for _, bc := range realBackends {
		for _, mode := range []Mode{ReadOnly, WorkspaceWrite} {
			t.Run(bc.name+"/"+string(mode), func(t *testing.T) {
				t.Parallel()
				b := bc.new(t)
				requireBackend(t, b)
				f := newEscapeFixture(t)
				tmp := filepath.Join(testBase(t), "session-tmp")
				require.NoError(t, os.Mkdir(tmp, 0o700))
				require.NoError(t, os.WriteFile(filepath.Join(tmp, "before"), []byte("kept\n"), 0o600))
				mapped := bc.namespaces(b)
				wantTmpdir := "/tmp"
				if !mapped {
					wantTmpdir = tmp
				}
				hostFile := fmt.Sprintf("/tmp/dsh-session-tmp-%d-%d", os.Getpid(), time.Now().UnixNano())
				t.Cleanup(func() { _ = os.Remove(hostFile) })
				policy := Policy{Mode: mode, WorkspaceRoot: f.root, TmpDir: tmp}

				r := run(t, confinePolicy(t, b, policy, `echo "$TMPDIR"; cat "$TMPDIR/before"; echo x > "$TMPDIR/mine"; echo x > `+hostFile), f.root)
				require.True(t, strings.HasPrefix(r.stdout, wantTmpdir+"\nkept\n"), "stdout %q stderr %q", r.stdout, r.stderr)
				require.False(t, exists(hostFile), "the host's /tmp was written")
				if mode == ReadOnly {
					expectDenied(t, b, r)
					require.False(t, exists(filepath.Join(tmp, "mine")), "the session tmp was written in read-only mode")
				} else {
					require.True(t, exists(filepath.Join(tmp, "mine")), "stderr %q", r.stderr)
				}
				if mapped {
					// What the command sees at /tmp is the session dir.
					r = run(t, confinePolicy(t, b, policy, "ls /tmp"), f.root)
					expectOK(t, b, r)
					require.Contains(t, r.stdout, "before")
				}

				// A workspace beneath /tmp (t.TempDir) is still the workspace,
				// from a working directory below its root too.
				ws := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(ws, "file"), []byte("in the root\n"), 0o644))
				require.NoError(t, os.Mkdir(filepath.Join(ws, "sub"), 0o755))
				policy.WorkspaceRoot = ws
				r = run(t, confinePolicy(t, b, policy, "pwd; cat ../file; echo x > here"), filepath.Join(ws, "sub"))
				require.True(t, strings.HasPrefix(r.stdout, filepath.Join(ws, "sub")+"\nin the root\n"), "stdout %q stderr %q", r.stdout, r.stderr)
				require.Equal(t, mode == WorkspaceWrite, exists(filepath.Join(ws, "sub", "here")), "stderr %q", r.stderr)
			})
		}
	}
}

// TestProcessIsolation checks what a confined command sees of processes:
// in a PID namespace only its own, never the agent's environment, and, as
// root, no capabilities.
func TestProcessIsolation(t *testing.T) {
	secret := fmt.Sprintf("sk-isolation-%d", time.Now().UnixNano())
	t.Setenv("DSH_ISOLATION_PROBE", secret)
	self := strconv.Itoa(os.Getpid())
	for _, bc := range realBackends {
		t.Run(bc.name, func(t *testing.T) {
			b := bc.new(t)
			requireBackend(t, b)
			f := newEscapeFixture(t)
			script := `for p in /proc/[0-9]*; do tr '\0' '\n' < $p/environ; done 2>/dev/null | grep -c DSH_ISOLATION_PROBE=` + secret + `;
				tr '\0' '\n' < /proc/` + self + `/environ 2>&1 | grep -c ` + secret + `;
				ls -d /proc/[0-9]* | wc -l; grep ^CapEff /proc/self/status`
			s := confine(t, b, WorkspaceWrite, f.root, script)
			r := run(t, spawnEnv(s, "DSH_ISOLATION_PROBE"), f.root)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			require.Len(t, lines, 4, "stdout %q stderr %q", r.stdout, r.stderr)
			require.Equal(t, "0", lines[0], "a process's environ held the agent's secret")
			require.Equal(t, "0", lines[1], "the agent's environ was readable: %s", r.stderr)
			if bc.namespaces(b) {
				n, err := strconv.Atoi(strings.TrimSpace(lines[2]))
				require.NoError(t, err)
				require.Less(t, n, 10, "a PID namespace shows only the command's processes")
			}
			if os.Geteuid() == 0 {
				require.Equal(t, "CapEff:\t0000000000000000", lines[3], "root keeps no capability")
			}
		})
	}
}

// spawnEnv runs s with the test's environment minus the named variable,
// as the bash tool passes a filtered environment.
func spawnEnv(s spawn, drop string) spawn {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, drop+"=") {
			env = append(env, kv)
		}
	}
	setup := s.setup
	s.env = env
	s.setup = setup
	return s
}

// TestSignalStatus checks how a command ended by a signal is reported: the
// helper outside a namespace dies of the same signal, the namespace init
// exits with 128+n, and bwrap passes the signal on as its exit status.
func TestSignalStatus(t *testing.T) {
	for _, bc := range realBackends {
		t.Run(bc.name, func(t *testing.T) {
			b := bc.new(t)
			requireBackend(t, b)
			f := newEscapeFixture(t)
			r := run(t, confine(t, b, ReadOnly, f.root, "kill -TERM $$"), f.root)
			switch {
			case bc.name == "landlock-subreaper":
				require.Equal(t, -1, r.code, "died of the signal")
				require.Equal(t, syscall.SIGTERM, r.signal)
			default:
				require.Equal(t, 128+int(syscall.SIGTERM), r.code)
			}
			r = run(t, confine(t, b, ReadOnly, f.root, "exit 7"), f.root)
			require.Equal(t, 7, r.code)
		})
	}
}
