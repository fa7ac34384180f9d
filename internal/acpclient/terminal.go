package acpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/internal/proctree"
)

// Terminals hosts terminal/create, terminal/output, terminal/wait_for_exit,
// terminal/kill and terminal/release by really running the commands: in
// the given cwd, with the given env added to Env, as a process tree of
// their own (a process group, or a Job Object on Windows), stdout and stderr captured together and cut from the front
// at outputByteLimit (on a character boundary). A command without args
// runs through sh -c (cmd /c on Windows), the way an editor's terminal runs a command line.
// Every call is recorded in order; the Conn kills what still runs when
// the agent's output ends.
type Terminals struct {
	// Env is the environment every command starts from; nil means the
	// client's own (os.Environ), as an editor's terminal inherits it.
	Env []string

	mu    sync.Mutex
	next  int
	terms map[string]*Terminal
	all   []*Terminal
	calls []TerminalCall
}

// TerminalCall is one terminal/* request the agent made.
type TerminalCall struct {
	Method     string
	TerminalID string
	// Err is the error answered, nil on success.
	Err *Error
}

// ExitStatus is how a terminal's command ended.
type ExitStatus struct {
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

// Terminal is one terminal the agent created.
type Terminal struct {
	ID      string
	Command string
	Args    []string
	// Env is the variables the agent asked for, as name=value.
	Env       []string
	Cwd       string
	ByteLimit int // 0: unlimited

	cmd   *exec.Cmd
	group *proctree.Group
	done  chan struct{}

	mu        sync.Mutex
	wrote     chan struct{} // closed and replaced on every write
	out       []byte
	truncated bool
	exit      *ExitStatus
	killed    bool
	released  bool
}

// Calls returns the terminal/* requests served so far, in order.
func (t *Terminals) Calls() []TerminalCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]TerminalCall(nil), t.calls...)
}

// Created returns every terminal created so far, released ones too.
func (t *Terminals) Created() []*Terminal {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*Terminal(nil), t.all...)
}

// Close kills every command still running.
func (t *Terminals) Close() {
	for _, term := range t.Created() {
		term.kill()
	}
}

// Output returns what the command wrote so far (its tail when cut) and
// whether it was cut.
func (tm *Terminal) Output() (string, bool) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return string(tm.out), tm.truncated
}

// Exit returns how the command ended, nil while it runs.
func (tm *Terminal) Exit() *ExitStatus {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.exit
}

// Killed reports whether terminal/kill (or release) killed the command.
func (tm *Terminal) Killed() bool {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.killed
}

// Released reports whether the agent released the terminal.
func (tm *Terminal) Released() bool {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.released
}

// WaitOutput waits until match accepts the output so far (or the command
// ended without it, or ctx ended) and returns that output.
func (tm *Terminal) WaitOutput(ctx context.Context, match func(output string) bool) (string, error) {
	for {
		tm.mu.Lock()
		out := string(tm.out)
		if tm.wrote == nil {
			tm.wrote = make(chan struct{})
		}
		wake := tm.wrote
		tm.mu.Unlock()
		if match(out) {
			return out, nil
		}
		select {
		case <-wake:
		case <-tm.done:
			if out, _ := tm.Output(); match(out) {
				return out, nil
			}
			return out, fmt.Errorf("terminal %s: the command ended without the awaited output", tm.ID)
		case <-ctx.Done():
			return out, fmt.Errorf("terminal %s: %w", tm.ID, ctx.Err())
		}
	}
}

// Done is closed when the command has ended.
func (tm *Terminal) Done() <-chan struct{} { return tm.done }

// Write captures output, keeping at most ByteLimit bytes (the tail).
func (tm *Terminal) Write(p []byte) (int, error) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.out = append(tm.out, p...)
	if tm.wrote != nil {
		close(tm.wrote)
	}
	tm.wrote = make(chan struct{})
	if tm.ByteLimit > 0 && len(tm.out) > tm.ByteLimit {
		cut := len(tm.out) - tm.ByteLimit
		for cut < len(tm.out) && !utf8.RuneStart(tm.out[cut]) {
			cut++
		}
		tm.out = append(tm.out[:0], tm.out[cut:]...)
		tm.truncated = true
	}
	return len(p), nil
}

func (tm *Terminal) kill() {
	select {
	case <-tm.done:
		return
	default:
	}
	tm.mu.Lock()
	tm.killed = true
	tm.mu.Unlock()
	_ = tm.group.Kill()
	_ = tm.group.Close()
}

func (t *Terminals) handler(method string) Handler {
	if t == nil {
		return nil
	}
	switch method {
	case "terminal/create":
		return t.create
	case "terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release":
		return t.serve
	}
	return nil
}

func (t *Terminals) record(c TerminalCall) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls = append(t.calls, c)
}

func (t *Terminals) create(_ context.Context, req Request) (any, error) {
	var p struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
		Env     []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"env"`
		Cwd             *string `json:"cwd"`
		OutputByteLimit *int    `json:"outputByteLimit"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.Command == "" {
		e := &Error{Code: CodeInvalidParams, Message: "Invalid params: a command is required"}
		t.record(TerminalCall{Method: req.Method, Err: e})
		return nil, e
	}
	tm := &Terminal{Command: p.Command, Args: p.Args, done: make(chan struct{})}
	for _, e := range p.Env {
		tm.Env = append(tm.Env, e.Name+"="+e.Value)
	}
	if p.Cwd != nil {
		tm.Cwd = *p.Cwd
	}
	if p.OutputByteLimit != nil {
		tm.ByteLimit = *p.OutputByteLimit
	}
	argv := append([]string{p.Command}, p.Args...)
	if len(p.Args) == 0 {
		argv = append(shellArgv(), p.Command)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = tm.Cwd
	base := t.Env
	if base == nil {
		base = os.Environ()
	}
	cmd.Env = append(append([]string{}, base...), tm.Env...)
	cmd.Stdout, cmd.Stderr = tm, tm
	tm.cmd = cmd
	group, err := proctree.Start(cmd)
	tm.group = group
	if err != nil {
		e := &Error{Code: CodeInternalError, Message: fmt.Sprintf("terminal/create: %v", err)}
		t.record(TerminalCall{Method: req.Method, Err: e})
		return nil, e
	}
	t.mu.Lock()
	t.next++
	tm.ID = "term-" + strconv.Itoa(t.next)
	if t.terms == nil {
		t.terms = map[string]*Terminal{}
	}
	t.terms[tm.ID] = tm
	t.all = append(t.all, tm)
	t.calls = append(t.calls, TerminalCall{Method: req.Method, TerminalID: tm.ID})
	t.mu.Unlock()
	go func() {
		err := cmd.Wait()
		st := exitStatus(cmd.ProcessState, err)
		tm.mu.Lock()
		tm.exit = st
		tm.mu.Unlock()
		close(tm.done)
	}()
	return map[string]string{"terminalId": tm.ID}, nil
}

// exitStatus reads how a command ended: its code, or its signal's name.
func exitStatus(ps *os.ProcessState, err error) *ExitStatus {
	if ps == nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return &ExitStatus{ExitCode: &code}
	}
	if name, ok := signaled(ps); ok {
		return &ExitStatus{Signal: &name}
	}
	code := ps.ExitCode()
	return &ExitStatus{ExitCode: &code}
}

// serve answers terminal/output, wait_for_exit, kill and release.
func (t *Terminals) serve(ctx context.Context, req Request) (any, error) {
	var p struct {
		TerminalID string `json:"terminalId"`
	}
	_ = json.Unmarshal(req.Params, &p)
	t.mu.Lock()
	tm := t.terms[p.TerminalID]
	if req.Method == "terminal/release" && tm != nil {
		delete(t.terms, p.TerminalID)
	}
	t.mu.Unlock()
	call := TerminalCall{Method: req.Method, TerminalID: p.TerminalID}
	if tm == nil {
		call.Err = &Error{Code: CodeInvalidParams, Message: "Invalid params: no terminal " + strconv.Quote(p.TerminalID)}
		t.record(call)
		return nil, call.Err
	}
	t.record(call)
	switch req.Method {
	case "terminal/output":
		out, cut := tm.Output()
		res := map[string]any{"output": out, "truncated": cut}
		if st := tm.Exit(); st != nil {
			res["exitStatus"] = st
		}
		return res, nil
	case "terminal/wait_for_exit":
		return Deferred(func() (any, error) {
			select {
			case <-tm.done:
				return tm.Exit(), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}), nil
	case "terminal/kill":
		tm.kill()
		return struct{}{}, nil
	default: // terminal/release
		tm.mu.Lock()
		tm.released = true
		tm.mu.Unlock()
		tm.kill()
		return struct{}{}, nil
	}
}
