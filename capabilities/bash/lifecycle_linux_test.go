//go:build linux

package bash

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAgentKilledTakesCommandsDown kills an agent (this test binary
// re-executed) with SIGKILL while each backend runs a background task and
// a foreground call that both left a `setsid nohup` process and a double
// fork behind: nothing may survive the agent.
func TestAgentKilledTakesCommandsDown(t *testing.T) {
	if os.Getenv(agentEnv) != "" {
		agentUnderKill(t)
		return
	}
	bin, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(bin, "-test.run=^TestAgentKilledTakesCommandsDown$", "-test.v", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), agentEnv+"=1", "DEEPSEEK_API_KEY=sk-kill-test", baseEnv+"="+suiteBase(t))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	var markers []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if m, ok := strings.CutPrefix(line, "MARKERS "); ok {
			f := strings.Fields(m)
			t.Logf("%s: %d processes started", f[0], len(f)-1)
			markers = append(markers, f[1:]...)
		}
		if strings.Contains(line, "SANDBOX NOT TESTED") {
			t.Log(strings.TrimSpace(line))
		}
		if line == "READY" {
			break
		}
	}
	require.NotEmpty(t, markers, "the agent started nothing")
	for _, m := range markers {
		require.Len(t, livePids(m), 1, "%s runs before the agent dies", m)
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Empty(t, gone(markers...), "processes outlived the agent killed with SIGKILL")
}

// agentUnderKill is the agent side: for each usable backend it starts the
// processes, prints their markers and READY, then waits to be killed.
func agentUnderKill(t *testing.T) {
	for _, sb := range suiteBackends(t) {
		if _, _, err := providerFor(sb.backend).Select(context.Background(), "read-only"); err != nil {
			fmt.Printf("SANDBOX NOT TESTED: %s unusable: %v\n", sb.name, err)
			continue
		}
		l := newEscapeLab(t, sb.backend, "workspace-write", os.Getenv("DEEPSEEK_API_KEY"))
		s := l.session()
		ms := make([]string, 5)
		for i := range ms {
			ms[i] = fmt.Sprintf("dsh-agentkill-%s-%d-%s", sb.name, i, l.id)
		}
		s.bash(t, orphanScript(ms[0], ms[1], "exec -a "+ms[2]+" sleep 300"), true)
		go s.bash(t, orphanScript(ms[3], ms[4], "sleep 300"), false)
		require.Eventually(t, func() bool {
			for _, m := range ms {
				if len(livePids(m)) != 1 {
					return false
				}
			}
			return true
		}, 20*time.Second, 20*time.Millisecond)
		fmt.Println("MARKERS " + sb.name + " " + strings.Join(ms, " "))
	}
	fmt.Println("READY")
	time.Sleep(2 * time.Minute) // killed long before
}

// TestSessionTmpLifecycle checks the session's private /tmp on each
// backend: it persists across the session's commands, is what TMPDIR
// names, is writable only in workspace-write, and is removed on Close.
func TestSessionTmpLifecycle(t *testing.T) {
	for _, sb := range suiteBackends(t) {
		for _, mode := range []string{"read-only", "workspace-write"} {
			t.Run(sb.name+"/"+mode, func(t *testing.T) {
				requireUsable(t, sb.backend)
				l := newEscapeLab(t, sb.backend, mode, "unused")
				s := l.session()
				out := s.bash(t, `echo "$TMPDIR"; echo one > "$TMPDIR/p" && echo wrote`, false)
				dirs, err := filepath.Glob(filepath.Join(l.tmpBase, "dsh-acp-tmp-*"))
				require.NoError(t, err)
				require.Len(t, dirs, 1, "one temp dir for the session")
				st, err := os.Stat(dirs[0])
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
				tmpdir, _, _ := strings.Cut(out, "\n")
				if ll, ok := sb.backend.(interface{ Namespaces() bool }); ok && !ll.Namespaces() {
					require.Equal(t, dirs[0], tmpdir, "without namespaces TMPDIR is the dir itself")
				} else {
					require.Equal(t, "/tmp", tmpdir)
				}
				if mode == "read-only" {
					require.NotContains(t, out, "wrote")
					require.NoFileExists(t, filepath.Join(dirs[0], "p"))
				} else {
					require.Contains(t, out, "wrote")
					require.Equal(t, "one\n", s.bash(t, `cat "$TMPDIR/p"`, false), "the next command sees it")
					require.FileExists(t, filepath.Join(dirs[0], "p"))
				}
				require.NoError(t, s.close())
				require.NoDirExists(t, dirs[0], "Close removes the session's temp dir")
			})
		}
	}
}

// TestOwnSession checks that every command leads its own session (the
// id the tool's Close sweeps by), so it has no controlling terminal.
func TestOwnSession(t *testing.T) {
	f := newFixture(t, nil)
	fields := strings.Fields(f.bashOK(t, `read -r -a st < /proc/$$/stat; echo $$ ${st[5]}`, nil))
	require.Len(t, fields, 2)
	require.Equal(t, fields[0], fields[1], "the shell leads its own session")
}
