package acpclient

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is an agent spawned as a subprocess, connected over its stdin
// and stdout.
type Process struct {
	*Conn
	// Cmd is the started command.
	Cmd *exec.Cmd

	stderr  *tail // nil when the caller set Cmd.Stderr
	exited  chan struct{}
	waitErr error

	closeOnce sync.Once
	closeErr  error
}

// Spawn starts cmd (Stdin and Stdout unset) and connects to it. The agent
// runs in a process group of its own unless cmd.SysProcAttr says
// otherwise; when cmd.Stderr is nil its last 16 KiB are kept (Stderr).
func Spawn(cmd *exec.Cmd, opts Options) (*Process, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil {
		return nil, errors.New("acpclient: Spawn needs a command without Stdin and Stdout")
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return nil, err
	}
	r, w := os.NewFile(uintptr(fds[0]), "agent-stdout"), os.NewFile(uintptr(fds[1]), "agent-stdout-w")
	cmd.Stdout = w
	err = cmd.Start()
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
		_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(2 * time.Second):
			_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
			_ = p.Cmd.Process.Kill()
			<-p.exited
		}
		errs = append(errs, fmt.Errorf("the agent did not exit within %v of its stdin closing: %w", grace, p.waitErr))
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL) // commands it left behind
	errs = append(errs, p.drain())
	return errors.Join(errs...)
}

// Kill kills the agent with SIGKILL, like a crash, then what is left of
// its process group, and reads its output to the end.
func (p *Process) Kill() error {
	p.closeOnce.Do(func() {
		_ = p.Cmd.Process.Kill()
		<-p.exited
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		p.closeErr = p.drain()
	})
	return p.closeErr
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
