package bash

import (
	"context"
	"errors"
	"fmt"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// Process-control timings.
const (
	// defaultKillGrace is how long a terminated process group gets between
	// SIGTERM and SIGKILL (tools contract § 3).
	defaultKillGrace = 3000 * time.Millisecond
	// pipeGrace is how long the pipes may stay open once the group is dead
	// (a process that left the group can still hold them); then they are
	// closed on our side.
	pipeGrace = 500 * time.Millisecond
	// groupPoll is how often a terminating group is checked for survivors.
	groupPoll = 10 * time.Millisecond
)

// errAborted is the plain error of a cancelled foreground run.
var errAborted = errors.New("command aborted")

// spec is one command to run.
type spec struct {
	command   string
	dir       string
	env       []string
	spillDir  string
	killGrace time.Duration
	// withoutSetup, when set, is called before a start is retried without
	// setup (sandbox.Confined.WithoutSetup).
	withoutSetup func()
	// setup prepares the command for its sandbox (sandbox.Confined.Setup);
	// nil for none.
	setup func(*exec.Cmd)
	// confined marks a command run through the sandbox (see
	// process.doTerminate).
	confined bool
	// track, when set, learns every started shell (the leader of its own
	// session, or the first process of its Job Object on Windows).
	track func(p *process)
	// live, when set, also receives both output streams as they arrive
	// (for the card of a running foreground command).
	live *liveTail
}

// process is a started `bash -c` in its own process group, with its two
// output streams being captured.
type process struct {
	cmd            *exec.Cmd
	pgid           int
	stdout, stderr *stream
	live           *liveTail   // nil: no live view
	pipes          [2]*os.File // read ends
	sys            procSys     // the OS's handle on the tree (run_<os>.go)

	exited   chan struct{} // closed once cmd.Wait returned
	drained  chan struct{} // closed once both readers returned
	finished chan struct{} // closed once exited and drained
	state    *os.ProcessState

	killGrace time.Duration
	confined  bool
	termOnce  sync.Once
	termDone  chan struct{} // closed once a termination completed
}

// start spawns the command through ex as the leader of a new session
// (its pid is its process group and session id) that the kernel kills if
// the agent dies (the parent-death signal is tied to the spawning thread,
// and Go keeps its threads). ctx is handed to the executor only; the
// process's lifetime is controlled with terminate. If the sandbox's setup
// makes the start fail (namespaces refused), it is retried once without.
func start(ctx context.Context, sp spec) (*process, error) {
	rOut, wOut, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	rErr, wErr, err := os.Pipe()
	if err != nil {
		_ = rOut.Close()
		_ = wOut.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd, sys, err := startCmd(sp, sp.setup, wOut, wErr)
	var exErr executorError
	if err != nil && sp.setup != nil && !errors.As(err, &exErr) {
		if sp.withoutSetup != nil {
			sp.withoutSetup()
		}
		cmd, sys, err = startCmd(sp, nil, wOut, wErr)
	}
	_ = wOut.Close()
	_ = wErr.Close()
	if err != nil {
		_ = rOut.Close()
		_ = rErr.Close()
		return nil, err
	}
	grace := sp.killGrace
	if grace <= 0 {
		grace = defaultKillGrace
	}
	p := &process{
		cmd:       cmd,
		pgid:      cmd.Process.Pid,
		stdout:    newStream("stdout", sp.spillDir),
		stderr:    newStream("stderr", sp.spillDir),
		live:      sp.live,
		pipes:     [2]*os.File{rOut, rErr},
		sys:       sys,
		exited:    make(chan struct{}),
		drained:   make(chan struct{}),
		finished:  make(chan struct{}),
		killGrace: grace,
		confined:  sp.confined,
		termDone:  make(chan struct{}),
	}
	if sp.track != nil {
		sp.track(p)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go p.read(rOut, p.stdout, &readers)
	go p.read(rErr, p.stderr, &readers)
	go func() {
		readers.Wait()
		close(p.drained)
	}()
	go func() {
		_ = cmd.Wait() // the status is read from ProcessState
		p.state = cmd.ProcessState
		close(p.exited)
		<-p.drained
		close(p.finished)
	}()
	return p, nil
}

// executorError is the executor's own failure (as opposed to a failed
// start); its text is the executor's.
type executorError struct{ err error }

func (e executorError) Error() string { return e.err.Error() }
func (e executorError) Unwrap() error { return e.err }

// startCmd builds the command through ex, prepares it with setup and
// starts it writing to the given pipe ends.
func startCmd(sp spec, setup func(*exec.Cmd), stdout, stderr *os.File) (*exec.Cmd, procSys, error) {
	cmd, err := command([]string{"bash", "-c", sp.command}, sp.dir, sp.env)
	if err != nil {
		return nil, procSys{}, executorError{err}
	}
	prepareShell(cmd)
	if setup != nil {
		setup(cmd)
	}
	cmd.Stdin = nil // os/exec connects /dev/null
	cmd.Stdout, cmd.Stderr = stdout, stderr
	sys, err := startShell(cmd)
	if err != nil {
		return nil, procSys{}, err
	}
	return cmd, sys, nil
}

// read copies one pipe into its stream until EOF or a forced close.
func (p *process) read(r *os.File, s *stream, wg *sync.WaitGroup) {
	defer wg.Done()
	defer s.close()
	defer func() { _ = r.Close() }()
	buf := make([]byte, readChunk)
	for {
		n, err := r.Read(buf)
		s.write(buf[:n])
		if p.live != nil {
			p.live.write(buf[:n])
		}
		if err != nil {
			return // EOF, or the deadline terminate sets
		}
	}
}

// terminate stops the whole process group: SIGTERM, then SIGKILL once the
// grace period passes while any member survives; then it waits for the
// shell to exit and for the pipes to drain (force-closing them after a
// short grace). It returns when that is done or ctx ends; the termination
// itself always runs to completion.
func (p *process) terminate(ctx context.Context) error {
	p.termOnce.Do(func() { go p.doTerminate() })
	select {
	case <-p.termDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *process) doTerminate() {
	defer close(p.termDone)
	select {
	case <-p.finished:
		return // nothing left that we own; the group id may be stale
	default:
	}
	if p.confined {
		// A sandbox's PID namespace ends with its init, which the group's
		// SIGTERM does not reach (from outside only SIGKILL does; bwrap's
		// init also leaves the group). The init's parent-death signal is
		// armed only once the sandbox is set up (bwrap), so a launcher
		// killed before that left the sandbox running, orphaned; and after
		// that the namespace died some time after the launcher, unwaited
		// for. The group is stopped while its namespace inits are killed,
		// so that it cannot start one in between.
		p.stopGroup()
		endNamespaces(p.pgid, pipeGrace)
		p.termGroup()
		p.contGroup()
	} else {
		p.termGroup()
	}
	grace := time.NewTimer(p.killGrace)
	defer grace.Stop()
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
wait:
	for {
		select {
		case <-grace.C:
			p.killGroup()
			p.awaitGroupGone(pipeGrace)
			break wait
		case <-tick.C:
			if p.hasExited() && !p.groupAlive() {
				break wait
			}
		}
	}
	<-p.exited
	select {
	case <-p.drained:
	case <-time.After(pipeGrace):
		for _, f := range p.pipes {
			_ = f.SetReadDeadline(time.Now()) // unblocks the reader; fails harmlessly once closed
		}
	}
	<-p.finished
}

// awaitGroupGone waits up to limit for the killed group's members to finish
// exiting (a SIGKILLed process needs a moment before it is gone; a zombie
// nobody reaps keeps the group alive, hence the limit).
func (p *process) awaitGroupGone(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for p.groupAlive() && time.Now().Before(deadline) {
		time.Sleep(groupPoll / 5)
	}
}

func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// exitInfo is how the shell ended: a signal name, else an exit code.
type exitInfo struct {
	code   int
	signal string
}

// exit returns the shell's end state; valid once exited is closed.
func (p *process) exit() exitInfo {
	if p.state == nil {
		return exitInfo{code: -1}
	}
	if sig, ok := signaled(p.state); ok {
		return exitInfo{signal: sig}
	}
	return exitInfo{code: p.state.ExitCode()}
}

// runForeground runs a command to completion, timeout or cancellation and
// returns the result text.
func runForeground(ctx context.Context, sp spec, timeoutMs float64, conf *confinement) (string, error) {
	if ctx.Err() != nil {
		return "", errAborted
	}
	p, err := start(ctx, sp)
	if err != nil {
		return "", fmt.Errorf("failed to start bash: %w", err)
	}
	timer := time.NewTimer(time.Duration(timeoutMs * float64(time.Millisecond)))
	defer timer.Stop()
	timedOut := false
	select {
	case <-p.finished:
	case <-timer.C:
		timedOut = true
		_ = p.terminate(context.Background())
	case <-ctx.Done():
		_ = p.terminate(context.Background())
		if conf != nil {
			sweepSession(p.pgid)
			conf.tripped(false) // put back what it changed before it was stopped
		}
		return "", errAborted
	}
	<-p.finished
	if timedOut && conf != nil {
		// A runner killed before its command leaves nothing behind either.
		sweepSession(p.pgid)
	}
	markers, err := endMarkers(conf, p.exit(), func() string { return p.stderr.snapshot().text }, timedOut, timeoutMs)
	if err != nil {
		return "", err
	}
	return resultText(p.stdout.snapshot(), p.stderr.snapshot(), markers), nil
}

// endMarkers are the markers a finished run's result ends with, local or
// in the editor's terminal: the sandbox's verdict on a confined command
// that failed (judged by its output), what the tripwire put back, a
// timeout, then the signal or the exit code. A confined runner that could
// not start the command is the tool's error instead.
func endMarkers(conf *confinement, ex exitInfo, output func() string, timedOut bool, timeoutMs float64) ([]string, error) {
	var markers []string
	denied := false
	if conf != nil && ex.signal == "" && ex.code > 0 {
		out := output()
		v := conf.confined.Classify(ex.code, out)
		if v.RunnerFailure {
			conf.tripped(false)
			return nil, unavailable(sandbox.RunnerFailureError(sandbox.Mode(conf.mode), out))
		}
		markers = append(markers, conf.markers(v)...)
		denied = v.Denied
	}
	markers = append(markers, conf.tripped(denied)...)
	if timedOut {
		markers = append(markers, "[timed out after "+formatMs(timeoutMs)+"ms]")
	}
	switch {
	case ex.signal != "":
		markers = append(markers, "[killed by signal: "+ex.signal+"]")
	case ex.code != 0:
		markers = append(markers, "[exit code: "+strconv.Itoa(ex.code)+"]")
	}
	return markers, nil
}

// formatMs prints a millisecond count the way JavaScript prints a number
// (integers without a fraction).
func formatMs(ms float64) string { return strconv.FormatFloat(ms, 'f', -1, 64) }
