package acpclient

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/proctree"
)

// Process is an agent spawned as a subprocess, connected over its stdin
// and stdout.
type Process struct {
	*Conn
	// Cmd is the started command.
	Cmd *exec.Cmd

	stderr  *tail           // nil when the caller set Cmd.Stderr
	group   *proctree.Group // nil when the caller set Cmd.SysProcAttr
	exited  chan struct{}
	waitErr error

	closeOnce sync.Once
	closeErr  error
}

// Spawn starts cmd (Stdin and Stdout unset) and connects to it. The agent
// runs as a process tree of its own (a process group, or a Job Object on
// Windows) unless cmd.SysProcAttr is set; when cmd.Stderr is nil its last 16 KiB are kept (Stderr).
func Spawn(cmd *exec.Cmd, opts Options) (*Process, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil {
		return nil, errors.New("acpclient: Spawn needs a command without Stdin and Stdout")
	}
	p := &Process{Cmd: cmd, exited: make(chan struct{})}
	if cmd.Stderr == nil {
		p.stderr = &tail{max: 16 << 10}
		cmd.Stderr = p.stderr
	}
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 2 * time.Second // a grandchild holding stderr must not block Wait
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Our own blocking pipe, not StdoutPipe: Wait must not close it before
	// every line the agent wrote has been read, and a blocking read is one
	// syscall per read.
	r, w, err := blockingPipe()
	if err != nil {
		_ = stdin.Close()
		return nil, err
	}
	cmd.Stdout = w
	if cmd.SysProcAttr == nil {
		p.group, err = proctree.Start(cmd)
	} else {
		err = cmd.Start()
	}
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		_ = stdin.Close()
		return nil, err
	}
	p.Conn = newConn(stdin, opts)
	p.Conn.stopped = p.exited
	go func() {
		defer r.Close()
		p.read(r)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the agent's process id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Exited is closed when the agent's process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Wait waits for the agent to exit and returns what exec.Cmd.Wait did.
func (p *Process) Wait() error {
	<-p.exited
	return p.waitErr
}

// Stderr returns the tail of the agent's stderr ("" when the caller took
// it).
func (p *Process) Stderr() string {
	if p.stderr == nil {
		return ""
	}
	return p.stderr.String()
}

// Close ends the agent's stdin, the way an editor quits, and waits up to
// grace for it to exit; then it terminates its process group (and 2 s
// later kills it). Whatever is left of the group is killed, and the
// output is read to its end. It returns the exit error, or why the
// agent had to be stopped. Later calls return the same.
func (p *Process) Close(grace time.Duration) error {
	p.closeOnce.Do(func() { p.closeErr = p.close(grace) })
	return p.closeErr
}

func (p *Process) close(grace time.Duration) error {
	_ = p.CloseWrite()
	var errs []error
	select {
	case <-p.exited:
		errs = append(errs, p.waitErr)
	case <-time.After(grace):
		p.signalGroup(false)
		select {
		case <-p.exited:
		case <-time.After(2 * time.Second):
			p.signalGroup(true)
			_ = p.Cmd.Process.Kill()
			<-p.exited
		}
		errs = append(errs, fmt.Errorf("the agent did not exit within %v of its stdin closing: %w", grace, p.waitErr))
	}
	p.signalGroup(true) // commands it left behind
	p.closeGroup()
	errs = append(errs, p.drain())
	return errors.Join(errs...)
}

// Kill kills the agent with SIGKILL, like a crash, then what is left of
// its process group, and reads its output to the end.
func (p *Process) Kill() error {
	p.closeOnce.Do(func() {
		_ = p.Cmd.Process.Kill()
		<-p.exited
		p.signalGroup(true)
		p.closeGroup()
		p.closeErr = p.drain()
	})
	return p.closeErr
}

// signalGroup terminates (or kills) the agent's process tree; nothing
// when the caller chose its own process attributes.
func (p *Process) signalGroup(kill bool) {
	switch {
	case p.group == nil:
	case kill:
		_ = p.group.Kill()
	default:
		_ = p.group.Terminate()
	}
}

func (p *Process) closeGroup() {
	if p.group != nil {
		_ = p.group.Close()
	}
}

// drain waits (at most 5 s) until the output has been read to its end:
// every process that held it is gone.
func (p *Process) drain() error {
	select {
	case <-p.Done():
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("the agent's stdout is still open 5 s after it exited")
	}
}

// tail keeps the last max bytes written.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
