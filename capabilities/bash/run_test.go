package bash

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

func TestContractExamples(t *testing.T) {
	f := newFixture(t, nil)
	require.Equal(t, "SNAPSHOT_OK\n", f.bashOK(t, "echo SNAPSHOT_OK", nil))
	require.Equal(t, "(no output)", f.bashOK(t, "true", nil))
	require.Equal(t, "[stderr]\nboom\n[exit code: 1]", f.bashOK(t, "echo boom >&2; exit 1", nil))
}

func TestResultAssembly(t *testing.T) {
	f := newFixture(t, nil)
	require.Equal(t, "out\n[stderr]\nerr", f.bashOK(t, "printf out; printf err >&2", nil))
	require.Equal(t, "out\n[stderr]\nerr\n", f.bashOK(t, "echo out; echo err >&2", nil))
	require.Equal(t, "partial\n[exit code: 3]", f.bashOK(t, "printf partial; exit 3", nil))
	require.Equal(t, "(no output)\n[exit code: 7]", f.bashOK(t, "exit 7", nil))
}

func TestWorkdir(t *testing.T) {
	f := newFixture(t, nil)
	require.NoError(t, os.Mkdir(filepath.Join(f.env.cwd, "sub"), 0o755))
	require.Equal(t, f.env.cwd+"\n", f.bashOK(t, "pwd", nil))
	require.Equal(t, filepath.Join(f.env.cwd, "sub")+"\n", f.bashOK(t, "pwd", map[string]any{"workdir": "sub"}))
	other := t.TempDir()
	require.Equal(t, other+"\n", f.bashOK(t, "pwd", map[string]any{"workdir": other}))

	// No session: Options.Cwd.
	fb := newFixture(t, func(o *Options) { o.Cwd = other })
	o := fb.reg.Execute(context.Background(), nil, "c", "bash", `{"command":"pwd","description":"d"}`)
	require.Equal(t, other+"\n", text(t, o))

	// A missing directory fails to start.
	o = f.call(context.Background(), f.env, "bash", map[string]any{"command": "pwd", "description": "d", "workdir": "nope"})
	require.True(t, o.IsError)
	require.Contains(t, text(t, o), "Error: failed to start bash: ")
	require.Nil(t, o.Error)
}

func TestEnvFiltering(t *testing.T) {
	environ := []string{
		"PATH=" + os.Getenv("PATH"), "FOO_TOKEN=leak1", "my_api_key=leak2", "DB_Secret=leak3",
		"KEYBOARD=leak4", "PLAIN=visible", "TERM=xterm-256color", "PAGER=less",
	}
	f := newFixture(t, func(o *Options) { o.Environ = func() []string { return environ } })
	out := f.bashOK(t, "env", nil)
	require.NotContains(t, out, "leak")
	require.NotContains(t, out, "FOO_TOKEN")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Contains(t, lines, "PLAIN=visible")
	for _, kv := range []string{"NO_COLOR=1", "TERM=dumb", "PAGER=cat", "GIT_PAGER=cat"} {
		require.Contains(t, lines, kv)
	}
	require.Equal(t, "\n", f.bashOK(t, `echo "$FOO_TOKEN"`, nil))

	require.Equal(t, []string{"A=1", "NO_COLOR=1", "TERM=dumb", "PAGER=cat", "GIT_PAGER=cat"},
		CommandEnv([]string{"A=1", "GIT_PAGER=less", "SSH_AUTH_KEY=x"}))
}

func TestStdinIsDevNull(t *testing.T) {
	f := newFixture(t, nil)
	require.Equal(t, "(no output)", f.bashOK(t, "cat", nil))
	require.Equal(t, "/dev/null\n", f.bashOK(t, "readlink /proc/self/fd/0", nil))
}

func TestOwnProcessGroup(t *testing.T) {
	f := newFixture(t, nil)
	out := f.bashOK(t, "read -r -a st < /proc/$$/stat; echo $$ ${st[4]}", nil)
	fields := strings.Fields(out)
	require.Len(t, fields, 2)
	require.Equal(t, fields[0], fields[1], "the shell leads its own process group")
}

func TestTimeout(t *testing.T) {
	f := newFixture(t, nil)
	start := time.Now()
	out := f.bashOK(t, "echo before; sleep 30", map[string]any{"timeoutMs": 200})
	require.Equal(t, "before\n[timed out after 200ms]\n[killed by signal: SIGTERM]", out)
	require.Less(t, time.Since(start), 5*time.Second)

	// A shell that traps TERM and exits with a status.
	out = f.bashOK(t, "trap 'echo caught; exit 5' TERM; sleep 30 & wait", map[string]any{"timeoutMs": 200})
	require.Equal(t, "caught\n[timed out after 200ms]\n[exit code: 5]", out)

	// A fractional timeout prints like a JavaScript number.
	out = f.bashOK(t, "sleep 30", map[string]any{"timeoutMs": 100.5})
	require.Equal(t, "(no output)\n[timed out after 100.5ms]\n[killed by signal: SIGTERM]", out)
}

func TestTimeoutClampAndDefault(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	tool := NewTool(Options{})
	require.Equal(t, 60000.0, tool.timeoutMs(args{}))
	require.Equal(t, 1500.0, tool.timeoutMs(args{TimeoutMs: ms(1500)}))
	require.Equal(t, 600000.0, tool.timeoutMs(args{TimeoutMs: ms(1e9)}))
	sandboxed := NewTool(Options{DefaultTimeout: 120000})
	require.Equal(t, 120000.0, sandboxed.timeoutMs(args{}))
	require.Equal(t, 3*time.Second, defaultKillGrace)
}

func TestSignalMarker(t *testing.T) {
	f := newFixture(t, nil)
	require.Equal(t, "(no output)\n[killed by signal: SIGKILL]", f.bashOK(t, "kill -9 $$", nil))
	require.Equal(t, "x\n[killed by signal: SIGTERM]", f.bashOK(t, "echo x; kill -TERM $$", nil))
}

func TestTruncationAndSpill(t *testing.T) {
	f := newFixture(t, nil)
	full, err := exec.Command("seq", "1", "60000").Output()
	require.NoError(t, err)
	require.Greater(t, len(full), 2*TailBytes)

	out := f.bashOK(t, "seq 1 60000; echo small >&2", nil)
	i := strings.Index(out, "\n[output truncated; full output: ")
	require.Positive(t, i)
	kept := out[:i]
	require.LessOrEqual(t, len(kept), TailBytes)
	require.NotEmpty(t, kept)
	require.True(t, strings.HasSuffix(string(full), kept), "the kept text is the stream's tail")
	rest := out[i+len("\n[output truncated; full output: "):]
	path, after, ok := strings.Cut(rest, "]")
	require.True(t, ok)
	require.Equal(t, "\n[stderr]\nsmall\n", after, "stderr is not truncated")
	require.Equal(t, f.spill, filepath.Dir(path))

	spilled, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(full), string(spilled), "the spill file holds the whole stream")
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	// Exactly the cap: neither truncated nor spilled.
	out = f.bashOK(t, "head -c 64000 /dev/zero | tr '\\0' a", nil)
	require.Equal(t, strings.Repeat("a", TailBytes), out)
	entries, err := os.ReadDir(f.spill)
	require.NoError(t, err)
	require.Len(t, entries, 1)
}

func TestValueChecks(t *testing.T) {
	plain := newFixture(t, nil)
	conf := newFixture(t, func(o *Options) { o.Sandbox = &Sandboxing{} })
	cases := []struct {
		f    *fixture
		args string
		want string
	}{
		{plain, `{"command":"  ","description":"d"}`, "invalid command: expected a non-empty string"},
		{plain, `{"command":"ls","description":" \n"}`, "invalid description: expected a non-empty string"},
		{plain, `{"command":"ls","description":"d","timeoutMs":0}`, "invalid timeoutMs: expected a positive number, got 0"},
		{plain, `{"command":"ls","description":"d","timeoutMs":-2.5}`, "invalid timeoutMs: expected a positive number, got -2.5"},
		{plain, `{"command":"ls","description":"d","sandbox_permissions":"workspace-write"}`, "invalid escalation: sandbox_permissions requires a justification"},
		{plain, `{"command":"ls","description":"d","justification":"x"}`, "invalid escalation: justification is only valid together with sandbox_permissions"},
		{plain, `{"command":"ls","description":"d","sandbox_permissions":"workspace-write","justification":" "}`, "invalid justification: expected a non-empty sentence"},
		{plain, `{"command":"ls","description":"d","sandbox_permissions":"workspace-write","justification":"needs it"}`, "sandbox_permissions is not available in this composition (no sandboxing executor to escalate)"},
		{conf, `{"command":"ls","description":"d","sandbox_permissions":"workspace-write"}`, "invalid escalation: sandbox_permissions requires a justification"},
		{conf, `{"command":"ls","description":"d","sandbox_permissions":"root","justification":"x"}`, `invalid arguments: "sandbox_permissions" must be one of ["workspace-write","danger-full-access"]`},
		{plain, `{"command":"ls"}`, `invalid arguments: missing required property "description"`},
	}
	for _, c := range cases {
		o := c.f.reg.Execute(context.Background(), c.f.env, "c", "bash", c.args)
		require.True(t, o.IsError, c.args)
		require.Equal(t, "Error: "+c.want, text(t, o), c.args)
	}
}

func TestCancelKillsTree(t *testing.T) {
	f := newFixture(t, nil)
	pidFile := filepath.Join(t.TempDir(), "pids")
	// The shell, two plain children, a child shell ignoring TERM (and its
	// sleep, which inherits the ignored disposition).
	command := `echo $$ >> ` + pidFile + `
sleep 100 & echo $! >> ` + pidFile + `
sleep 100 & echo $! >> ` + pidFile + `
sh -c 'trap "" TERM; echo $$ >> ` + pidFile + `; sleep 100 & echo $! >> ` + pidFile + `; wait' &
wait`
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan capabilities.Outcome, 1)
	go func() { done <- f.call(ctx, f.env, "bash", map[string]any{"command": command, "description": "tree"}) }()
	pids := readPids(t, pidFile, 5)
	for _, p := range pids {
		require.True(t, alive(p), "pid %d running before cancel", p)
	}
	start := time.Now()
	cancel()
	var o capabilities.Outcome
	select {
	case o = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled call did not return")
	}
	require.True(t, o.IsError)
	require.Equal(t, "Error: command aborted", text(t, o))
	require.Nil(t, o.Error)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "TERM-ignoring members force the SIGKILL escalation")
	for i, p := range pids {
		st, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
		cl, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
		require.False(t, alive(p), "pid #%d %d survived the cancel: %s %q", i, p, st, cl)
	}
}

func TestCancelPlainChildren(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.KillGrace = 5 * time.Second })
	pidFile := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan capabilities.Outcome, 1)
	go func() {
		done <- f.call(ctx, f.env, "bash", map[string]any{
			"command":     "sleep 100 & echo $! >> " + pidFile + "; sleep 100 & echo $! >> " + pidFile + "; echo $$ >> " + pidFile + "; wait",
			"description": "tree",
		})
	}()
	pids := readPids(t, pidFile, 3)
	cancel()
	o := <-done
	require.Equal(t, "Error: command aborted", text(t, o))
	for _, p := range pids {
		require.False(t, alive(p), "pid %d survived the cancel", p)
	}
}

func TestEscapedGrandchildDoesNotHang(t *testing.T) {
	f := newFixture(t, nil)
	pidFile := filepath.Join(t.TempDir(), "pids")
	start := time.Now()
	// setsid leaves the group but keeps stdout open.
	out := f.bashOK(t, "setsid sleep 30 & echo $! > "+pidFile+"; echo hi; sleep 30", map[string]any{"timeoutMs": 200})
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, "hi\n[timed out after 200ms]\n[killed by signal: SIGTERM]", out)
	for _, p := range readPids(t, pidFile, 1) {
		if proc, err := os.FindProcess(p); err == nil {
			_ = proc.Kill()
		}
	}
}

func TestAbortBeforeStart(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := f.call(ctx, f.env, "bash", map[string]any{"command": "touch ran", "description": "d"})
	require.Equal(t, "Error: command aborted", text(t, o))
	_, err := os.Stat(filepath.Join(f.env.cwd, "ran"))
	require.True(t, os.IsNotExist(err))
}
