package hooks

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
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/internal/proctree"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

func runIn(t *testing.T, r *Runner, dir, command string, timeout time.Duration) Run {
	t.Helper()
	return r.Run(context.Background(), stubSession{id: "s", cwd: dir}, Spec{Command: command, Dir: dir, Timeout: timeout})
}

// gone waits until pid no longer exists.
func gone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool { return !proctree.Running(pid) }, 5*time.Second, 10*time.Millisecond,
		"process %d outlived its hook", pid)
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	var raw []byte
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		raw = b
		return err == nil && len(strings.TrimSpace(string(b))) > 0
	}, 5*time.Second, 10*time.Millisecond)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	return pid
}

func TestRunnerFeedsStdinAndScrubsTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	r := &Runner{Environ: func() []string { return []string{"PATH=" + os.Getenv("PATH"), "DEEPSEEK_API_KEY=sk-secret", "KEEP=1"} }}
	run := r.Run(context.Background(), stubSession{cwd: dir}, Spec{
		Command: `cat; echo; echo "dir=$PWD key=${DEEPSEEK_API_KEY:-none} keep=$KEEP extra=$CLAUDE_PROJECT_DIR" >&2; exit 3`,
		Dir:     dir, Stdin: []byte(`{"a":1}` + "\n"), Env: []string{"CLAUDE_PROJECT_DIR=" + dir}})
	require.Equal(t, 3, *run.ExitCode)
	require.Equal(t, "{\"a\":1}\n\n", run.Stdout)
	require.Equal(t, "dir="+dir+" key=none keep=1 extra="+dir+"\n", run.Stderr)
}

func TestRunnerKillsAHookThatNeverExitsWithItsGroup(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	run := runIn(t, &Runner{}, dir, `sleep 300 & echo $! > child.pid; echo started; sleep 300`, 300*time.Millisecond)
	require.Less(t, time.Since(start), 5*time.Second, "the turn is not wedged")
	require.Nil(t, run.ExitCode, "a killed hook has no exit code")
	require.True(t, run.TimedOut)
	require.Equal(t, "started\n", run.Stdout)
	require.Contains(t, run.Stderr, "hook timed out after 300ms and was killed")
	gone(t, readPid(t, filepath.Join(dir, "child.pid")))
	require.Equal(t, "pass", Decode(Claude, PreToolUse, run).Recorded())
}

func TestRunnerKillsABackgroundChildWhenTheHookExits(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	run := runIn(t, &Runner{}, dir, `sleep 300 & echo $! > child.pid; echo '{"decision":"block","reason":"bg"}'`, 10*time.Second)
	require.Less(t, time.Since(start), 3*time.Second, "the child holding stdout does not hold the hook")
	require.Equal(t, 0, *run.ExitCode)
	require.Equal(t, "block", Decode(Claude, Stop, run).Decision)
	gone(t, readPid(t, filepath.Join(dir, "child.pid")))
}

func TestRunnerIsNotWedgedByAChildThatLeftTheGroup(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	dir := t.TempDir()
	start := time.Now()
	run := runIn(t, &Runner{}, dir, `setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' & sleep 0.2; echo done`, 10*time.Second)
	pid := readPid(t, filepath.Join(dir, "escaped.pid"))
	t.Cleanup(func() { _ = proctree.KillTree(pid) })
	require.Less(t, time.Since(start), 3*time.Second)
	require.Equal(t, 0, *run.ExitCode)
	require.Equal(t, "done\n", run.Stdout)
}

func TestRunnerCapsMegabytesOfOutput(t *testing.T) {
	dir := t.TempDir()
	r := &Runner{MaxOutput: 64 << 10}
	start := time.Now()
	run := runIn(t, r, dir, `head -c 8000000 /dev/zero | tr '\0' x; head -c 3000000 /dev/zero | tr '\0' y >&2; exit 2`, 20*time.Second)
	require.Less(t, time.Since(start), 15*time.Second)
	require.Equal(t, 2, *run.ExitCode)
	require.Len(t, run.Stdout, 64<<10)
	require.Len(t, run.Stderr, 64<<10)
	o := Decode(Claude, PreToolUse, run)
	require.Equal(t, "block", o.Decision)
	require.Len(t, summarize(o.Stderr), 500+len("…"), "the logged summary stays short")
}

func TestRunnerSpawnFailureIsAnOutcome(t *testing.T) {
	run := runIn(t, &Runner{}, filepath.Join(t.TempDir(), "missing"), "true", time.Second)
	require.Nil(t, run.ExitCode)
	require.Contains(t, run.Stderr, "start hook")
	require.Equal(t, "pass", Decode(Codex, Stop, run).Recorded())
}

func TestRunnerAbortKillsTheHook(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	run := (&Runner{}).Run(ctx, stubSession{cwd: dir}, Spec{Command: "sleep 300", Dir: dir})
	require.Less(t, time.Since(start), 5*time.Second)
	require.Nil(t, run.ExitCode)
	require.Contains(t, run.Stderr, "hook aborted")
}

func TestRunnerConfinesLikeBash(t *testing.T) {
	p := sandbox.NewProvider(sandbox.DefaultChain(mustLauncher(t))...)
	if _, _, err := p.Select(context.Background(), sandbox.ReadOnly); err != nil {
		t.Skipf("no sandbox backend on this host: %v", err)
	}
	dir := t.TempDir()
	mode := sandbox.ReadOnly
	r := &Runner{Sandbox: &Sandboxing{Confiner: p,
		Mode: func(pipeline.Conversation) sandbox.Mode { return mode },
		Root: func(s pipeline.Conversation) string { return s.Cwd() }}}
	run := runIn(t, r, dir, `echo hi > written.txt`, 10*time.Second)
	require.NotEqual(t, 0, *run.ExitCode, "read-only: the hook cannot write the project")
	require.NoFileExists(t, filepath.Join(dir, "written.txt"))

	mode = sandbox.WorkspaceWrite
	run = runIn(t, r, dir, `echo hi > written.txt`, 10*time.Second)
	require.Equal(t, 0, *run.ExitCode, run.Stderr)
	require.FileExists(t, filepath.Join(dir, "written.txt"))

	unavailable := &Runner{Sandbox: &Sandboxing{Confiner: sandbox.NewProvider(),
		Mode: func(pipeline.Conversation) sandbox.Mode { return sandbox.ReadOnly },
		Root: func(s pipeline.Conversation) string { return s.Cwd() }}}
	run = runIn(t, unavailable, dir, `echo never > never.txt`, time.Second)
	require.Nil(t, run.ExitCode, "fails closed: the hook does not run unconfined")
	require.Contains(t, run.Stderr, "refusing to run the command unconfined")
	require.NoFileExists(t, filepath.Join(dir, "never.txt"))
}

// rootsSession is a session with extra workspace roots.
type rootsSession struct {
	stubSession
	roots []string
}

func (s rootsSession) Host() *capabilities.Host { return &capabilities.Host{Roots: s.roots} }

func TestRunnerWritesExtraRootsLikeTheRoot(t *testing.T) {
	p := sandbox.NewProvider(sandbox.DefaultChain(mustLauncher(t))...)
	if _, _, err := p.Select(context.Background(), sandbox.WorkspaceWrite); err != nil {
		t.Skipf("no sandbox backend on this host: %v", err)
	}
	base := t.TempDir() // beneath /tmp, which bwrap's workspace-write replaces by an empty tmpfs
	proj, extra, away := filepath.Join(base, "proj"), filepath.Join(base, "lib"), filepath.Join(base, "away")
	for _, d := range []string{proj, extra, away} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	mode := sandbox.WorkspaceWrite
	r := &Runner{Sandbox: &Sandboxing{Confiner: p,
		Mode: func(pipeline.Conversation) sandbox.Mode { return mode },
		Root: func(s pipeline.Conversation) string { return s.Cwd() }}}
	s := rootsSession{stubSession: stubSession{id: "s", cwd: proj}, roots: []string{extra}}
	hook := func(command string) Run {
		return r.Run(context.Background(), s, Spec{Command: command, Dir: proj, Timeout: 10 * time.Second})
	}

	// A formatter hook on a file of the extra root: it reads and rewrites it.
	require.NoError(t, os.WriteFile(filepath.Join(extra, "lib.go"), []byte("unformatted\n"), 0o644))
	run := hook(`tr a-z A-Z < ` + extra + `/lib.go > ` + extra + `/lib.tmp && mv ` + extra + `/lib.tmp ` + extra + `/lib.go`)
	require.Equal(t, 0, *run.ExitCode, run.Stderr)
	got, err := os.ReadFile(filepath.Join(extra, "lib.go"))
	require.NoError(t, err)
	require.Equal(t, "UNFORMATTED\n", string(got))

	// A directory in no root stays out of reach.
	_ = hook(`echo x > ` + away + `/escaped.txt`)
	require.NoFileExists(t, filepath.Join(away, "escaped.txt"))

	// Under read-only the extra root is read-only too.
	mode = sandbox.ReadOnly
	run = hook(`echo x > ` + extra + `/ro.txt`)
	require.NotEqual(t, 0, *run.ExitCode)
	require.NoFileExists(t, filepath.Join(extra, "ro.txt"))
}

func mustLauncher(t *testing.T) []string {
	l, err := sandbox.HelperLauncher()
	require.NoError(t, err)
	return l
}
