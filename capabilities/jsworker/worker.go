package jsworker

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
)

// worker is one worker process.
type worker struct {
	cmd    *exec.Cmd
	conn   *jsproto.Conn
	stdin  io.Closer
	stderr *headBuffer
	mem    int64

	msgs     chan jsproto.Message // from the reader goroutine
	exited   chan struct{}        // closed once the process was waited for
	quit     chan struct{}        // closed when no run reads msgs any more
	quitOnce sync.Once

	mu     sync.Mutex
	parked *time.Timer // the idle timer; nil while running
	gone   bool        // closed, killed or reaped
}

// spawn starts argv as a worker.
func spawn(argv []string, setup func(*exec.Cmd)) (*worker, error) {
	w, err := startCmd(argv, setup)
	if err != nil && setup != nil {
		// A host that refuses the namespaces the backend asks for: the
		// runner's fallback confines it still.
		w, err = startCmd(argv, nil)
	}
	return w, err
}

func startCmd(argv []string, setup func(*exec.Cmd)) (*worker, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	// Nothing of the agent's environment (its API key above all) reaches
	// the worker: it needs none of it.
	cmd.Env = []string{}
	if setup != nil {
		setup(cmd)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &worker{cmd: cmd, stdin: stdin, stderr: &headBuffer{max: 16 << 10}, msgs: make(chan jsproto.Message),
		exited: make(chan struct{}), quit: make(chan struct{}), conn: jsproto.NewConn(stdout, stdin)}
	for i, a := range argv {
		if a == "-mem" && i+1 < len(argv) {
			_, _ = fmt.Sscan(argv[i+1], &w.mem)
		}
	}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the program worker: %w", err)
	}
	go w.read()
	// Its start-up (a loaded machine, a cold page cache) is not the
	// program's compute time: the limits count from its ready line.
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case m := <-w.msgs:
		if m.Type == jsproto.TypeReady {
			return w, nil
		}
		w.kill()
		<-w.exited
		return nil, fmt.Errorf("start the program worker: it sent %q before ready", m.Type)
	case <-w.exited:
		d := Classify(w.stderr.String(), cmd.ProcessState, w.mem)
		return nil, fmt.Errorf("start the program worker: %s", d.Message)
	case <-t.C:
		w.kill()
		<-w.exited
		return nil, fmt.Errorf("start the program worker: not ready after %s", startTimeout)
	}
}

// startTimeout bounds a worker's start.
const startTimeout = 30 * time.Second

// read forwards the worker's messages until its stdout ends, then reaps it.
func (w *worker) read() {
	for {
		m, err := w.conn.Receive()
		if err != nil {
			break
		}
		select {
		case w.msgs <- m:
		case <-w.quit: // dropped: nobody runs on this worker any more
		}
	}
	_ = w.cmd.Wait()
	w.mu.Lock()
	w.gone = true
	w.mu.Unlock()
	close(w.exited)
}

// take claims a parked worker for a run; false when it is gone.
func (w *worker) take() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone || w.parked == nil || !w.parked.Stop() {
		return false
	}
	w.parked = nil
	return true
}

// park arms the idle timer: after idle the worker is closed and removed.
func (w *worker) park(idle time.Duration, remove func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.parked = time.AfterFunc(idle, func() {
		remove()
		w.close()
	})
}

// close ends the worker gently (end of input), then by force.
func (w *worker) close() {
	w.quitOnce.Do(func() { close(w.quit) })
	_ = w.stdin.Close()
	select {
	case <-w.exited:
	case <-time.After(DefaultGrace):
		w.kill()
	}
}

// kill ends the process at once.
func (w *worker) kill() {
	w.mu.Lock()
	w.gone = true
	w.mu.Unlock()
	w.quitOnce.Do(func() { close(w.quit) })
	_ = w.stdin.Close()
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
}

// runState guards the answers of one run: an answer that comes after the
// run ended is dropped (the worker may be running another program).
type runState struct {
	mu          sync.Mutex
	ended       bool
	outstanding int
	kick        chan struct{}
}

// run sends r and serves it until Done, the worker's death or a limit.
// healthy reports whether the worker may run another program.
func (w *worker) run(ctx context.Context, r jsproto.Run, lim Limits, h Handler, grace time.Duration) (jsproto.Done, bool) {
	if err := w.conn.Send(jsproto.Message{Type: jsproto.TypeRun, Run: &r}); err != nil {
		return w.died(), false
	}
	st := &runState{kick: make(chan struct{}, 1)}
	defer func() {
		st.mu.Lock()
		st.ended = true
		st.mu.Unlock()
	}()
	answer := func(id int64) func(jsproto.Reply) {
		var once sync.Once
		return func(rep jsproto.Reply) {
			once.Do(func() {
				st.mu.Lock()
				defer st.mu.Unlock()
				if st.ended {
					return
				}
				st.outstanding--
				rep.ID = id
				_ = w.conn.Send(jsproto.Message{Type: jsproto.TypeReply, Reply: &rep})
				select {
				case st.kick <- struct{}{}:
				default:
				}
			})
		}
	}
	// The silence watchdog: while the agent owes the worker nothing, the
	// worker must say something (a request, or Done) within its compute
	// limit plus the grace; its own interrupt failed otherwise.
	compute := time.Duration(r.ComputeMS) * time.Millisecond
	silence := time.NewTimer(compute + grace)
	defer silence.Stop()
	var wall <-chan time.Time
	if lim.Wall > 0 {
		t := time.NewTimer(lim.Wall)
		defer t.Stop()
		wall = t.C
	}
	done := ctx.Done()
	var stopBy <-chan time.Time // the grace after a cancel
	var stopped jsproto.Done
	for {
		select {
		case m := <-w.msgs:
			silence.Reset(compute + grace)
			switch m.Type {
			case jsproto.TypeDone:
				if m.Done == nil {
					return w.crashed("the worker sent an empty done"), false
				}
				return *m.Done, true
			case jsproto.TypeCall, jsproto.TypeSpawn, jsproto.TypeBatch:
				batch, why := requests(m, answer)
				if why != "" {
					return w.crashed(why), false
				}
				st.mu.Lock()
				st.outstanding += len(batch)
				st.mu.Unlock()
				h(batch)
			default:
				return w.crashed(fmt.Sprintf("the worker sent an unexpected %q", m.Type)), false
			}
		case <-st.kick:
			silence.Reset(compute + grace)
		case <-silence.C:
			st.mu.Lock()
			owed := st.outstanding
			st.mu.Unlock()
			if owed > 0 {
				silence.Reset(compute + grace)
				continue
			}
			w.kill()
			<-w.exited
			return jsproto.Done{Fail: jsproto.FailTimeout, Message: fmt.Sprintf(
				"the program computed for more than %s without yielding and did not stop; its worker was killed", compute)}, false
		case <-done:
			done = nil
			reason := context.Cause(ctx).Error()
			_ = w.conn.Send(jsproto.Message{Type: jsproto.TypeCancel, Cancel: &jsproto.Cancel{Reason: reason}})
			stopped = jsproto.Done{Fail: jsproto.FailCancelled, Message: reason}
			stopBy = time.After(grace)
		case <-wall:
			wall = nil
			_ = w.conn.Send(jsproto.Message{Type: jsproto.TypeCancel, Cancel: &jsproto.Cancel{Reason: "wall", Wall: true}})
			stopped = jsproto.Done{Fail: jsproto.FailWall}
			stopBy = time.After(grace)
		case <-stopBy:
			w.kill()
			<-w.exited
			return stopped, false
		case <-w.exited:
			return w.died(), false
		}
	}
}

// requests unpacks a batch (a lone request is a batch of one), each with
// its answer; why says what is wrong with a malformed one.
func requests(m jsproto.Message, answer func(id int64) func(jsproto.Reply)) (batch []Request, why string) {
	items := []jsproto.Message{m}
	if m.Type == jsproto.TypeBatch {
		if len(m.Batch) == 0 {
			return nil, "the worker sent an empty batch"
		}
		items = m.Batch
	}
	batch = make([]Request, 0, len(items))
	for _, it := range items {
		var id int64
		switch {
		case it.Type == jsproto.TypeCall && it.Call != nil:
			id = it.Call.ID
		case it.Type == jsproto.TypeSpawn && it.Spawn != nil:
			id = it.Spawn.ID
		default:
			return nil, fmt.Sprintf("the worker sent a malformed request (%q)", it.Type)
		}
		batch = append(batch, Request{Message: it, Answer: answer(id)})
	}
	return batch, ""
}

// crashed is a protocol violation: the worker is killed.
func (w *worker) crashed(why string) jsproto.Done {
	w.kill()
	<-w.exited
	return jsproto.Done{Fail: FailCrash, Message: "the program worker broke the protocol: " + why}
}

// died classifies a worker that ended on its own, from its stderr.
func (w *worker) died() jsproto.Done {
	w.kill()
	<-w.exited
	return Classify(w.stderr.String(), w.cmd.ProcessState, w.mem)
}

// Classify turns how a worker ended into the Done of its program: the
// memory cap, a stack overflow, a signal, or another exit.
func Classify(stderr string, ps interface{ String() string }, mem int64) jsproto.Done {
	low := strings.ToLower(stderr)
	switch {
	case strings.Contains(low, "out of memory") || strings.Contains(low, "cannot allocate memory"):
		return jsproto.Done{Fail: FailMemory, Message: fmt.Sprintf("the program used more memory than its cap (%d MiB) allows; its worker was stopped", mem>>20)}
	case strings.Contains(low, "stack overflow") || strings.Contains(low, "stack exceeds"):
		return jsproto.Done{Fail: FailCrash, Message: "the program's worker crashed: stack overflow (the program nests or recurses too deeply)"}
	}
	state := "ended"
	if ps != nil {
		state = ps.String()
	}
	msg := "the program's worker crashed (" + state + ")"
	if line := firstLine(stderr); line != "" {
		msg += ": " + line
	}
	return jsproto.Done{Fail: FailCrash, Message: msg}
}

// firstLine is the first non-empty line of s.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// headBuffer keeps the first max bytes written to it (where the runtime
// names a fatal error) and drops the rest.
type headBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

// Write implements io.Writer.
func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String returns what was kept.
func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.b)
}
