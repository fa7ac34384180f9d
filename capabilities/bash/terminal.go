package bash

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// terminalStdin starts the script of a command run in a host terminal: its
// stdin is /dev/null, not the terminal (a command that would wait for
// input ends instead, as a local one does).
const terminalStdin = "exec </dev/null; "

// hostCallLimit bounds each terminal call made after the command's own
// wait is over (kill, output, release), so that a host that stops
// answering cannot hold a turn or a closing session.
const hostCallLimit = 5 * time.Second

// terminalCommand is the command a host terminal runs for sp: the confined
// argv when conf is set (the same wrapping as a local run, without the
// local spawn's namespace setup), else `bash -c <command>`, its program
// resolved to an absolute path here (the host's PATH may differ), behind
// `env -i <the command's environment>` so that the host's own environment
// never reaches the command: it sees exactly what a local run sees.
func terminalCommand(sp spec, conf *confinement) (capabilities.TerminalCommand, error) {
	argv := []string{"bash", "-c", sp.command}
	if conf != nil {
		argv = append([]string(nil), conf.confined.Argv...)
	}
	prog, err := absProgram(argv[0])
	if err != nil {
		return capabilities.TerminalCommand{}, err
	}
	envProg, err := absProgram("env")
	if err != nil {
		return capabilities.TerminalCommand{}, err
	}
	args := []string{"-i"}
	for _, kv := range sp.env {
		if name, _, ok := strings.Cut(kv, "="); ok && name != "" {
			args = append(args, kv)
		}
	}
	args = append(append(args, prog), argv[1:]...)
	return capabilities.TerminalCommand{Command: envProg, Args: args, Cwd: sp.dir, OutputByteLimit: TailBytes}, nil
}

// absProgram resolves a program name against the agent's PATH.
func absProgram(name string) (string, error) {
	if filepath.IsAbs(name) {
		return name, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// terminals are the host terminals a Tool's calls hold: from creation
// until their release (which, for a finished command, waits until its
// result is in the session log).
type terminals struct {
	mu   sync.Mutex
	open map[capabilities.Terminal]struct{}
}

func (ts *terminals) add(t capabilities.Terminal) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.open == nil {
		ts.open = map[capabilities.Terminal]struct{}{}
	}
	ts.open[t] = struct{}{}
}

// take removes t and reports whether it was still held (so that exactly
// one caller releases it).
func (ts *terminals) take(t capabilities.Terminal) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	_, ok := ts.open[t]
	delete(ts.open, t)
	return ok
}

// takeAll removes and returns every terminal still held.
func (ts *terminals) takeAll() []capabilities.Terminal {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]capabilities.Terminal, 0, len(ts.open))
	for t := range ts.open {
		out = append(out, t)
	}
	ts.open = nil
	return out
}

// release frees t unless another caller already took it; ctx only
// bounds the calls.
func (ts *terminals) release(ctx context.Context, t capabilities.Terminal, kill bool) {
	if ts.take(t) {
		free(ctx, t, kill)
	}
}

// closeAll kills and releases every terminal still held.
func (ts *terminals) closeAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, t := range ts.takeAll() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			free(ctx, t, true)
		}()
	}
	wg.Wait()
}

// free releases t, killing its command first when kill is set. Each call
// gets hostCallLimit, whatever ctx says about the turn.
func free(ctx context.Context, t capabilities.Terminal, kill bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hostCallLimit)
	defer cancel()
	if kill {
		_ = t.Kill(ctx)
	}
	_ = t.Release(ctx)
}

// waited is the outcome of a terminal's WaitForExit.
type waited struct {
	status capabilities.ExitStatus
	err    error
}

// runInTerminal runs a foreground command in a host terminal: its card
// shows the terminal while it runs, a timeout or a cancelled turn kill it
// (terminal/kill), and the result is read from the terminal's output. The
// terminal is released once the result is in the session log (a cancelled
// run releases it at once).
func (t *Tool) runInTerminal(ctx context.Context, call *capabilities.Call, h *capabilities.Host, sp spec, conf *confinement, timeoutMs float64, description string) (string, error) {
	if ctx.Err() != nil {
		return "", errAborted
	}
	if conf != nil {
		// The editor spawns it: no namespace setup can go with it.
		conf.confined = conf.confined.WithoutSetup()
	}
	cmd, err := terminalCommand(sp, conf)
	if err != nil {
		return "", fmt.Errorf("failed to start bash: %w", err)
	}
	term, err := h.Terminals.Create(ctx, cmd)
	if err != nil {
		if ctx.Err() != nil {
			return "", errAborted
		}
		return "", fmt.Errorf("failed to start bash in the editor's terminal: %w", err)
	}
	t.terms.add(term)
	settled := false
	defer func() {
		if !settled {
			conf.tripped(false) // stopped or lost: put back what it changed
		}
	}()
	if h.Live != nil {
		h.Live.Show(call.CallID, capabilities.LiveView{Description: description, TerminalID: term.ID()})
	}
	waitCtx, stopWait := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWait()
	exited := make(chan waited, 1)
	go func() {
		st, err := term.WaitForExit(waitCtx)
		exited <- waited{st, err}
	}()
	timer := time.NewTimer(time.Duration(timeoutMs * float64(time.Millisecond)))
	defer timer.Stop()
	timedOut := false
	var w waited
	select {
	case w = <-exited:
	case <-timer.C:
		timedOut = true
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hostCallLimit)
		_ = term.Kill(kctx)
		cancel()
		select {
		case w = <-exited:
		case <-time.After(hostCallLimit):
			w = waited{err: errors.New("the terminal did not report an exit after terminal/kill")}
		}
	case <-ctx.Done():
		stopWait()
		t.terms.release(ctx, term, true)
		return "", errAborted
	}
	if w.err != nil {
		t.terms.release(ctx, term, true)
		return "", fmt.Errorf("waiting for the editor's terminal: %w", w.err)
	}
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hostCallLimit)
	out, err := term.Output(octx)
	cancel()
	if err != nil {
		t.terms.release(ctx, term, true)
		return "", fmt.Errorf("reading the editor's terminal: %w", err)
	}
	status := w.status
	if out.Exit != nil {
		status = *out.Exit
	}
	t.releaseAfterResult(ctx, call, term)
	settled = true
	return terminalResult(out, status, conf, timedOut, timeoutMs)
}

// terminalResult assembles the result text of a terminal run the way a
// local run's is (tools contract § 3), from the terminal's one stream: the
// output (with the truncation notice when the terminal dropped its
// beginning; there is no spill file), then the markers.
func terminalResult(out capabilities.TerminalOutput, st capabilities.ExitStatus, conf *confinement, timedOut bool, timeoutMs float64) (string, error) {
	ex := exitInfo{signal: signalName(st.Signal)}
	if st.Code != nil {
		ex.code = *st.Code
	}
	markers, err := endMarkers(conf, ex, func() string { return out.Output }, timedOut, timeoutMs)
	if err != nil {
		return "", err
	}
	return resultText(tailCapture(out), capture{}, markers), nil
}

// tailCapture is the terminal's output as a stream capture, bounded to
// TailBytes on our side too (a host may keep more than it was asked to),
// cut at a whole UTF-8 sequence.
func tailCapture(out capabilities.TerminalOutput) capture {
	c := capture{text: out.Output, truncated: out.Truncated}
	if len(c.text) > TailBytes {
		i := len(c.text) - TailBytes
		for i < len(c.text) && !utf8.RuneStart(c.text[i]) {
			i++
		}
		c.text, c.truncated = c.text[i:], true
	}
	return c
}

// signalName spells a host's signal the way local results do ("SIGKILL"):
// hosts report names with or without the prefix, or numbers.
func signalName(s string) string {
	switch {
	case s == "":
		return ""
	case strings.HasPrefix(s, "SIG"):
		return s
	}
	if n, err := strconv.Atoi(s); err == nil {
		return SignalName(syscall.Signal(n))
	}
	return "SIG" + strings.ToUpper(s)
}

// releaseAfterResult releases term once the call's tool/result is in the
// session log, so that the card shows the terminal until the result
// replaces it; without a log it is released at once. A session closed
// before that releases it in Close.
func (t *Tool) releaseAfterResult(ctx context.Context, call *capabilities.Call, term capabilities.Terminal) {
	if call.Session == nil || call.Session.Log() == nil {
		t.terms.release(ctx, term, false)
		return
	}
	log := call.Session.Log()
	var once sync.Once
	var unsubscribe func()
	unsubscribe = log.Subscribe(func(ev session.Event) {
		if ev.Type != session.TypeToolResult {
			return
		}
		var r session.ToolResult
		if ev.Decode(&r) != nil || r.CallID != call.CallID {
			return
		}
		// Subscribers run under the log's append lock, in order: the
		// release is sent here, right after the result's own update, so
		// its place on the wire is fixed (the host's answer is not
		// awaited: Terminal.Release returns once the request is out).
		// Unsubscribing takes the lock, so it happens outside.
		once.Do(func() {
			t.terms.release(ctx, term, false)
			go unsubscribe()
		})
	})
}
