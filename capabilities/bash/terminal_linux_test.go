//go:build linux

package bash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
)

// hostEnv is a session environment whose host is given.
type hostEnv struct {
	testEnv
	host *capabilities.Host
}

func (e hostEnv) Host() *capabilities.Host { return e.host }

// execTerminals is a host that runs each terminal's command for real, the
// way an editor does: the program it is given, in the cwd it is given,
// with the host's own environment (holding a secret the command must never
// see) plus the given one, stdout and stderr into one bounded output.
// Every call is recorded in order.
type execTerminals struct {
	t   *testing.T
	env []string // the host's own environment

	mu      sync.Mutex
	calls   []string // "create", "wait", "output", "kill", "release" with the terminal id
	cmds    []capabilities.TerminalCommand
	terms   []*execTerminal
	created chan *execTerminal
	changed chan struct{}
}

func newExecTerminals(t *testing.T) *execTerminals {
	return &execTerminals{t: t, env: append(os.Environ(), "HOST_SECRET_TOKEN=leaked"),
		created: make(chan *execTerminal, 16), changed: make(chan struct{}, 64)}
}

func (h *execTerminals) record(call string) {
	h.mu.Lock()
	h.calls = append(h.calls, call)
	h.mu.Unlock()
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// Calls returns the recorded calls so far.
func (h *execTerminals) Calls() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// awaitCall waits until call was recorded.
func (h *execTerminals) awaitCall(call string) {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for !slices.Contains(h.Calls(), call) {
		select {
		case <-h.changed:
		case <-deadline:
			h.t.Fatalf("no %q call; calls: %v", call, h.Calls())
		}
	}
}

func (h *execTerminals) Create(_ context.Context, c capabilities.TerminalCommand) (capabilities.Terminal, error) {
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Dir = c.Cwd
	cmd.Env = append(slices.Clone(h.env), c.Env...)
	out := &limitedBuffer{limit: c.OutputByteLimit}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	id := fmt.Sprintf("term-%d", len(h.terms)+1)
	term := &execTerminal{h: h, id: id, cmd: cmd, out: out, done: make(chan struct{})}
	h.terms = append(h.terms, term)
	h.cmds = append(h.cmds, c)
	h.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(term.done)
	}()
	h.record("create " + id)
	h.created <- term
	return term, nil
}

// execTerminal is one terminal of execTerminals.
type execTerminal struct {
	h    *execTerminals
	id   string
	cmd  *exec.Cmd
	out  *limitedBuffer
	done chan struct{}
}

func (e *execTerminal) ID() string { return e.id }

func (e *execTerminal) status() *capabilities.ExitStatus {
	select {
	case <-e.done:
	default:
		return nil
	}
	ws := e.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return &capabilities.ExitStatus{Signal: SignalName(ws.Signal())}
	}
	code := ws.ExitStatus()
	return &capabilities.ExitStatus{Code: &code}
}

func (e *execTerminal) Output(context.Context) (capabilities.TerminalOutput, error) {
	e.h.record("output " + e.id)
	text, truncated := e.out.snapshot()
	return capabilities.TerminalOutput{Output: text, Truncated: truncated, Exit: e.status()}, nil
}

func (e *execTerminal) WaitForExit(ctx context.Context) (capabilities.ExitStatus, error) {
	e.h.record("wait " + e.id)
	select {
	case <-e.done:
		return *e.status(), nil
	case <-ctx.Done():
		return capabilities.ExitStatus{}, ctx.Err()
	}
}

func (e *execTerminal) Kill(context.Context) error {
	e.h.record("kill " + e.id)
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	return nil
}

func (e *execTerminal) Release(context.Context) error {
	e.h.record("release " + e.id)
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	return nil
}

// limitedBuffer keeps the last limit bytes written (all with limit 0).
type limitedBuffer struct {
	mu        sync.Mutex
	limit     int
	b         []byte
	truncated bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	if l.limit > 0 && len(l.b) > l.limit {
		l.b = l.b[len(l.b)-l.limit:]
		l.truncated = true
	}
	return len(p), nil
}

func (l *limitedBuffer) snapshot() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b), l.truncated
}

// liveRecorder is a capabilities.Live that records what it was shown.
type liveRecorder struct {
	mu    sync.Mutex
	views []capabilities.LiveView
	calls []string
	shown chan capabilities.LiveView
}

func newLiveRecorder() *liveRecorder {
	return &liveRecorder{shown: make(chan capabilities.LiveView, 1024)}
}

func (r *liveRecorder) Show(callID string, v capabilities.LiveView) {
	r.mu.Lock()
	r.views = append(r.views, v)
	r.calls = append(r.calls, callID)
	r.mu.Unlock()
	r.shown <- v
}

func (r *liveRecorder) Views() []capabilities.LiveView {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.views)
}

// terminalLab is a session whose host runs commands in execTerminals,
// confined by backend b (nil: no sandbox) in mode, with a workspace and a
// directory outside it, both outside /tmp.
type terminalLab struct {
	reg         *capabilities.Registry
	tool        *Tool
	env         hostEnv
	host        *execTerminals
	live        *liveRecorder
	ws, outside string
}

func newTerminalLab(t *testing.T, b suiteBackend, mode string) *terminalLab {
	t.Helper()
	base := suiteBase(t)
	l := &terminalLab{host: newExecTerminals(t), live: newLiveRecorder(),
		ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	require.NoError(t, os.Mkdir(l.ws, 0o755))
	require.NoError(t, os.Mkdir(l.outside, 0o755))
	opts := Options{SpillDir: base, KillGrace: 300 * time.Millisecond, Tasks: NewTasks(nil),
		Environ: func() []string { return append(os.Environ(), "AGENT_API_KEY=agent-secret", "PLAIN=visible") }}
	if b.backend != nil {
		requireUsable(t, b.backend)
		opts.Sandbox = &Sandboxing{
			Confiner:   providerFor(b.backend),
			Root:       func(*capabilities.Call) string { return l.ws },
			Mode:       func(*capabilities.Call) string { return mode },
			SessionTmp: true,
			TmpBase:    base,
		}
	}
	l.tool = NewTool(opts)
	l.reg = capabilities.NewRegistry(l.tool)
	l.env = hostEnv{
		testEnv: testEnv{cwd: l.ws, log: session.NewLog(session.Header{ID: "s", Cwd: l.ws}, func() int64 { return 0 }, nil)},
		host:    &capabilities.Host{Terminals: l.host, Live: l.live},
	}
	t.Cleanup(func() { _ = l.tool.Close(context.Background()) })
	return l
}

// bash runs one foreground call and returns its outcome.
func (l *terminalLab) bash(ctx context.Context, callID, command string, extra map[string]any) capabilities.Outcome {
	args := map[string]any{"command": command, "description": "lab command"}
	for k, v := range extra {
		args[k] = v
	}
	return l.reg.Execute(ctx, l.env, callID, "bash", string(jsonx.MustMarshal(args)))
}

// record appends the call's tool/result, as the agent loop does.
func (l *terminalLab) record(callID string, o capabilities.Outcome) {
	l.env.log.Append(session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, CallID: callID, Content: o.Content, IsError: o.IsError})
}

func TestTerminalRunsTheConfinedArgv(t *testing.T) {
	for _, b := range suiteBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := newTerminalLab(t, b, "workspace-write")
			outside := filepath.Join(l.outside, "escaped")
			inside := filepath.Join(l.ws, "made")
			o := l.bash(context.Background(), "c1",
				`echo "hi [$HOST_SECRET_TOKEN] [$AGENT_API_KEY] $PLAIN"; readlink /proc/self/fd/0; echo in > `+inside+`; echo out > `+outside, nil)
			l.record("c1", o)
			require.False(t, o.IsError, "%+v", o.Content)
			res := o.Content[0].Text

			// The host ran our argv: env -i with the command's environment,
			// then the sandbox runner, never the bare shell.
			require.Len(t, l.host.cmds, 1)
			c := l.host.cmds[0]
			require.True(t, filepath.IsAbs(c.Command), c.Command)
			require.Equal(t, "env", filepath.Base(c.Command))
			require.Equal(t, "-i", c.Args[0])
			i := slices.IndexFunc(c.Args[1:], func(a string) bool { return !strings.Contains(a, "=") }) + 1
			runner := c.Args[i]
			require.True(t, filepath.IsAbs(runner), runner)
			switch b.backend.Name() {
			case "bwrap":
				require.Equal(t, "bwrap", filepath.Base(runner))
			default:
				require.Equal(t, sandbox.HelperArg, c.Args[i+1])
			}
			require.Equal(t, l.ws, c.Cwd)
			require.Equal(t, TailBytes, c.OutputByteLimit)

			// What the command saw and did.
			require.True(t, strings.HasPrefix(res, "hi [] [] visible\n/dev/null\n"), res)
			require.FileExists(t, inside)
			require.NoFileExists(t, outside)
			require.Contains(t, res, "[sandbox: file access denied under workspace-write mode]")
			require.True(t, strings.HasSuffix(res, "\n[exit code: 1]"), res)

			// The card showed the terminal, then it was released after the
			// result was recorded.
			v := l.live.Views()
			require.Equal(t, []capabilities.LiveView{{Description: "lab command", TerminalID: "term-1"}}, v)
			l.host.awaitCall("release term-1")
			require.Equal(t, []string{"create term-1", "wait term-1", "output term-1", "release term-1"}, l.host.Calls())
		})
	}
}

func TestTerminalWithoutSandboxAndUnreleasedUntilRecorded(t *testing.T) {
	l := newTerminalLab(t, suiteBackend{}, "")
	o := l.bash(context.Background(), "c1", "printf 'out\\n'; printf 'err\\n' >&2; exit 3", nil)
	require.False(t, o.IsError)
	require.Equal(t, "out\nerr\n[exit code: 3]", o.Content[0].Text)
	c := l.host.cmds[0]
	require.Equal(t, []string{"-c", terminalStdin + "printf 'out\\n'; printf 'err\\n' >&2; exit 3"}, c.Args[len(c.Args)-2:])
	require.Equal(t, "bash", filepath.Base(c.Args[len(c.Args)-3]))

	// Not released until the result is in the log: the card still shows it.
	require.NotContains(t, l.host.Calls(), "release term-1")
	l.env.log.Append(session.TypeToolResult, session.ToolResult{CallID: "other"})
	require.NotContains(t, l.host.Calls(), "release term-1")
	l.record("c1", o)
	l.host.awaitCall("release term-1")
	require.Equal(t, 1, count(l.host.Calls(), "release term-1"))
}

func TestTerminalTimeoutKillsThenReleases(t *testing.T) {
	l := newTerminalLab(t, suiteBackend{}, "")
	o := l.bash(context.Background(), "c1", "echo started; sleep 30", map[string]any{"timeoutMs": 300})
	require.False(t, o.IsError, "%+v", o.Content)
	require.Equal(t, "started\n[timed out after 300ms]\n[killed by signal: SIGKILL]", o.Content[0].Text)
	l.record("c1", o)
	l.host.awaitCall("release term-1")
	calls := l.host.Calls()
	require.Equal(t, []string{"create term-1", "wait term-1", "kill term-1", "output term-1", "release term-1"}, calls)
}

func TestTerminalCancelKillsThenReleases(t *testing.T) {
	l := newTerminalLab(t, suiteBackend{}, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan capabilities.Outcome, 1)
	go func() { done <- l.bash(ctx, "c1", "sleep 30", nil) }()
	term := <-l.host.created
	l.host.awaitCall("wait term-1")
	cancel()
	o := <-done
	require.True(t, o.IsError)
	require.Equal(t, "Error: command aborted", o.Content[0].Text)
	require.Equal(t, []string{"create term-1", "wait term-1", "kill term-1", "release term-1"}, l.host.Calls())
	<-term.done // the command is gone
}

func TestTerminalCloseReleasesWhatIsHeld(t *testing.T) {
	l := newTerminalLab(t, suiteBackend{}, "")
	o := l.bash(context.Background(), "c1", "echo done", nil)
	require.Equal(t, "done\n", o.Content[0].Text)
	// The session closes before the result is recorded.
	require.NoError(t, l.tool.Close(context.Background()))
	require.Equal(t, []string{"create term-1", "wait term-1", "output term-1", "kill term-1", "release term-1"}, l.host.Calls())
	l.record("c1", o) // too late: nothing more happens
	require.NoError(t, l.tool.Close(context.Background()))
	require.Equal(t, 1, count(l.host.Calls(), "release term-1"))
}

func TestTerminalBackgroundStaysLocal(t *testing.T) {
	l := newTerminalLab(t, suiteBackend{}, "")
	o := l.bash(context.Background(), "c1", "echo bg", map[string]any{"run_in_background": true})
	require.Equal(t, "started background task bash-1", o.Content[0].Text)
	require.Empty(t, l.host.Calls())
}

func count(calls []string, c string) int {
	n := 0
	for _, x := range calls {
		if x == c {
			n++
		}
	}
	return n
}

func TestLiveOutputWhileTheCommandRuns(t *testing.T) {
	f := newFixture(t, nil)
	live := newLiveRecorder()
	env := hostEnv{testEnv: f.env, host: &capabilities.Host{Live: live}}
	fifo := filepath.Join(t.TempDir(), "gate")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	done := make(chan capabilities.Outcome, 1)
	go func() {
		done <- f.reg.Execute(context.Background(), env, "c1", "bash",
			string(jsonx.MustMarshal(map[string]any{"command": "echo first; echo oops >&2; read x < " + fifo + "; echo second", "description": "gated"})))
	}()
	// The card shows the first lines while the command waits on the gate
	// (stdout and stderr in the order they were read).
	for seen := false; !seen; {
		select {
		case v := <-live.shown:
			require.Equal(t, "gated", v.Description)
			require.Equal(t, int64(0), v.Offset)
			seen = strings.Contains(v.Output, "first\n") && strings.Contains(v.Output, "oops\n")
		case <-time.After(10 * time.Second):
			t.Fatalf("no live view with the first lines; views: %+v", live.Views())
		}
	}
	select {
	case o := <-done:
		t.Fatalf("the command ended before its gate opened: %+v", o)
	default:
	}
	require.NoError(t, os.WriteFile(fifo, []byte("go\n"), 0o600))
	o := <-done
	require.Equal(t, "first\nsecond\n[stderr]\noops\n", o.Content[0].Text)
	// The last view, shown before the result was returned, has it all.
	views := live.Views()
	last := views[len(views)-1].Output
	require.Len(t, last, len("first\noops\nsecond\n"))
	require.True(t, strings.HasSuffix(last, "second\n"), last)
	n := len(views)
	// A command that ends at once shows nothing live (its result is all).
	o = f.reg.Execute(context.Background(), env, "c2", "bash", `{"command":"echo quiet","description":"d"}`)
	require.Equal(t, "quiet\n", o.Content[0].Text)
	require.Len(t, live.Views(), n)
}

func TestLiveTailCutsAtWholeRunes(t *testing.T) {
	var l liveTail
	l.write([]byte("héllo "))
	l.write([]byte("€"[:2]))
	out, off, total := l.view(false)
	assert.Equal(t, "héllo ", out)
	assert.Equal(t, int64(0), off)
	assert.Equal(t, int64(9), total)
	l.write([]byte("€"[2:]))
	out, _, _ = l.view(false)
	assert.Equal(t, "héllo €", out)

	var big liveTail
	big.write(bytes.Repeat([]byte("é"), liveTailBytes)) // 2 bytes each
	out, off, total = big.view(false)
	assert.Equal(t, int64(2*liveTailBytes), total)
	assert.Equal(t, liveTailBytes, len(out))
	assert.Equal(t, total-int64(len(out)), off)
	assert.True(t, strings.HasPrefix(out, "é"))
}

// The errors the host returns surface as the call's error.
func TestTerminalCreateFailure(t *testing.T) {
	l := newTerminalLab(t, suiteBackend{}, "")
	l.env.host = &capabilities.Host{Terminals: failingTerminals{}}
	o := l.bash(context.Background(), "c1", "true", nil)
	require.True(t, o.IsError)
	require.Equal(t, "Error: failed to start bash in the editor's terminal: the editor refused", o.Content[0].Text)
}

type failingTerminals struct{}

func (failingTerminals) Create(context.Context, capabilities.TerminalCommand) (capabilities.Terminal, error) {
	return nil, errors.New("the editor refused")
}

func TestTerminalOutputIsBoundedOnOurSide(t *testing.T) {
	big := strings.Repeat("é", TailBytes) // twice the bound, in bytes
	c := tailCapture(capabilities.TerminalOutput{Output: "start" + big})
	require.True(t, c.truncated)
	require.Len(t, c.text, TailBytes)
	require.True(t, strings.HasPrefix(c.text, "é"))
	require.Equal(t, c.text+"\n[output truncated; full output: (unavailable)]", streamText(c))
	small := tailCapture(capabilities.TerminalOutput{Output: "ok\n", Truncated: true})
	require.Equal(t, "ok\n\n[output truncated; full output: (unavailable)]", streamText(small))
}
