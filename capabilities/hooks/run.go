package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/bash"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/internal/proctree"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// DefaultMaxOutput is how many bytes of each output stream a hook run
// keeps; the rest is read and dropped, so a hook that prints megabytes
// neither blocks nor grows the agent.
const DefaultMaxOutput = 1 << 20

// pipeGrace is how long the output pipes may stay open after the hook's
// process group is gone (a process that left the group can hold them);
// then they are closed on our side.
const pipeGrace = 500 * time.Millisecond

// Confiner wraps an argv so it runs confined (sandbox.Provider).
type Confiner interface {
	Confine(ctx context.Context, argv []string, p sandbox.Policy) (sandbox.Confined, error)
}

// Sandboxing confines hooks the way the bash tool is confined: the
// session's sandbox mode, beneath the session's workspace root and its
// extra workspace roots (capabilities.Host.Roots), writable alike under
// workspace-write.
type Sandboxing struct {
	Confiner Confiner
	// Mode returns the session's effective sandbox mode.
	Mode func(s pipeline.Conversation) sandbox.Mode
	// Root returns the writable workspace root for the session.
	Root func(s pipeline.Conversation) string
}

// Runner runs hook commands: `bash -c <command>` in the session's working
// directory, in its own process group, with the bash tool's command
// environment (secrets dropped) plus the dialect's variables; confined when
// Sandbox is set. A run that outlives its timeout or its context is killed
// with its whole group. When the hook's shell exits, whatever it left
// running in its group is killed too, so no hook leaks a process.
type Runner struct {
	// Sandbox confines every run (nil: unconfined, as upstream's hook
	// compositions run).
	Sandbox *Sandboxing
	// Environ returns the agent's environment (nil: os.Environ).
	Environ func() []string
	// Env decides which of its variables reach a hook, as for bash
	// commands (zero: the default rule, secret-looking names dropped).
	Env bash.EnvPolicy
	// MaxOutput caps each kept stream (zero: DefaultMaxOutput).
	MaxOutput int
}

// Run is one finished hook process.
type Run struct {
	// ExitCode is the exit status; nil when there is none (killed by a
	// signal or at its timeout, or never started).
	ExitCode *int
	Stdout   string
	Stderr   string
	// TimedOut is set when the run was killed at its timeout.
	TimedOut bool
	// Duration is the wall time of the run.
	Duration time.Duration
}

// Spec is one hook invocation.
type Spec struct {
	Command string
	Dir     string
	Stdin   []byte
	// Env is added to the command environment.
	Env     []string
	Timeout time.Duration
}

// Run executes one hook for session s. It never fails: a spawn or
// sandbox failure is a run without exit code whose stderr is the error
// (hooks contract § 3).
func (r *Runner) Run(ctx context.Context, s pipeline.Conversation, sp Spec) Run {
	start := time.Now()
	run := r.run(ctx, s, sp)
	run.Duration = time.Since(start)
	return run
}

func (r *Runner) run(ctx context.Context, s pipeline.Conversation, sp Spec) Run {
	line := sp.Command
	if r.Sandbox != nil {
		policy := sandbox.Policy{Mode: r.Sandbox.Mode(s), WorkspaceRoot: r.Sandbox.Root(s),
			ExtraRoots: capabilities.HostOf(s).Roots}
		c, err := r.Sandbox.Confiner.Confine(ctx, []string{"bash", "-c", sp.Command}, policy)
		if err != nil {
			return Run{Stderr: err.Error()}
		}
		line = sandbox.ExecLine(c.Argv)
	}
	timeout := sp.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	environ := os.Environ
	if r.Environ != nil {
		environ = r.Environ
	}
	limit := r.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}

	prog, err := bash.Program()
	if err != nil {
		return Run{Stderr: fmt.Sprintf("start hook: %v", err)}
	}
	cmd := exec.Command(prog, "-c", line)
	cmd.Dir = sp.Dir
	cmd.Env = append(r.Env.Filter(environ()), sp.Env...)
	inR, inW, err := os.Pipe()
	if err != nil {
		return Run{Stderr: fmt.Sprintf("hook stdin pipe: %v", err)}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return Run{Stderr: fmt.Sprintf("hook stdout pipe: %v", err)}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return Run{Stderr: fmt.Sprintf("hook stderr pipe: %v", err)}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	group, err := proctree.Start(cmd)
	closeAll(inR, outW, errW)
	if err != nil {
		closeAll(inW, outR, errR)
		return Run{Stderr: fmt.Sprintf("start hook: %v", err)}
	}
	defer group.Close()

	// stdin: written in the background, so a hook that never reads it
	// cannot block us; the pipe breaks when the group dies.
	go func() {
		_, _ = inW.Write(sp.Stdin)
		_ = inW.Close()
	}()
	stdout, stderr := &capped{limit: limit}, &capped{limit: limit}
	var readers sync.WaitGroup
	readers.Add(2)
	go drain(outR, stdout, &readers)
	go drain(errR, stderr, &readers)

	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the status is read from ProcessState
		close(exited)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	timedOut := false
	select {
	case <-exited:
	case <-timer.C:
		timedOut = true
		_ = group.Kill()
		<-exited
	case <-ctx.Done():
		_ = group.Kill()
		<-exited
	}
	// The shell is gone; nothing it started outlives it.
	_ = group.Kill()
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(pipeGrace):
		closeAll(outR, errR) // a process that left the group holds the pipes
		<-done
	}

	run := Run{Stdout: stdout.String(), Stderr: stderr.String(), TimedOut: timedOut}
	if st := cmd.ProcessState; st != nil && !timedOut {
		if st.Exited() {
			code := st.ExitCode()
			run.ExitCode = &code
		}
	}
	if timedOut {
		run.Stderr = joinLines(run.Stderr, fmt.Sprintf("hook timed out after %s and was killed", timeout))
	} else if ctx.Err() != nil && run.ExitCode == nil {
		run.Stderr = joinLines(run.Stderr, "hook aborted")
	}
	return run
}

func joinLines(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// drain reads r to its end (or a forced close) into c.
func drain(r *os.File, c *capped, wg *sync.WaitGroup) {
	defer wg.Done()
	defer func() { _ = r.Close() }()
	_, err := io.Copy(c, r)
	if err != nil && !errors.Is(err, os.ErrClosed) {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
	}
}

// capped keeps the first limit bytes written to it and counts the rest.
type capped struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	limit   int
	dropped int64
	err     error
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - c.buf.Len(); room > 0 {
		if len(p) <= room {
			c.buf.Write(p)
		} else {
			c.buf.Write(p[:room])
			c.dropped += int64(len(p) - room)
		}
	} else {
		c.dropped += int64(len(p))
	}
	return len(p), nil
}

// String returns the kept bytes.
func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
