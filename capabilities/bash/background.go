package bash

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/sandbox"
)

// taskKind is the kind (and id prefix) of bash's background tasks.
const taskKind = "bash"

// labelMax is the most runes of a command shown as a task label.
const labelMax = 80

// bgTask is a background bash command as a Task.
type bgTask struct {
	p        *process // nil when the spawn failed
	spawnErr *stream  // the failed spawn's stderr
	done     chan struct{}

	killRequested atomic.Bool
	mu            sync.Mutex
	outPos        int64
	errPos        int64

	conf    *confinement // nil: unconfined
	shown   atomic.Bool  // Status has reported the task settled
	marked  bool         // the settled task's network marker was read
	tripped []string     // the tripwire's markers not read yet
}

// tripInterval is how often a running background task's tripwire is
// checked (besides at every read and when the task ends).
const tripInterval = time.Second

// startBackground spawns sp without a timeout. The task runs until it ends
// or is killed; a spawn failure yields a settled task whose stderr says why.
func startBackground(ctx context.Context, sp spec, conf *confinement) *bgTask {
	p, err := start(context.WithoutCancel(ctx), sp)
	if err != nil {
		s := newStream("stderr", sp.spillDir)
		s.write([]byte("spawn failed: " + err.Error()))
		done := make(chan struct{})
		close(done)
		return &bgTask{spawnErr: s, done: done}
	}
	b := &bgTask{p: p, done: p.finished, conf: conf}
	if conf != nil && conf.confined.Tripwire != nil {
		go b.guard()
	}
	return b
}

// guard checks the task's tripwire while it runs and once it has ended.
func (b *bgTask) guard() {
	tick := time.NewTicker(tripInterval)
	defer tick.Stop()
	for {
		select {
		case <-b.done:
			b.mu.Lock()
			b.trip()
			b.mu.Unlock()
			return
		case <-tick.C:
			b.mu.Lock()
			b.trip()
			b.mu.Unlock()
		}
	}
}

// trip runs the tripwire and keeps its markers for the next read (the
// caller holds mu).
func (b *bgTask) trip() {
	b.tripped = append(b.tripped, b.conf.tripped(len(b.tripped) > 0)...)
}

// netMarkers are, once, the markers of a settled task that failed on a
// connection its sandbox refused: in the first read after Status has said
// the task settled, so that the output carrying them also says so (a read
// that raced the task's end and still said "running" carries none).
func (b *bgTask) netMarkers() []string {
	if b.conf == nil || b.marked || !b.shown.Load() {
		return nil
	}
	b.marked = true
	ex := b.p.exit()
	if ex.signal != "" || ex.code <= 0 {
		return nil
	}
	if v := b.conf.confined.Classify(ex.code, b.p.stderr.snapshot().text); v.NetDenied && !v.RunnerFailure {
		return []string{sandbox.NetMarker(sandbox.Mode(b.conf.mode)), NetEscalationMarker}
	}
	return nil
}

// Done implements Task.
func (b *bgTask) Done() <-chan struct{} { return b.done }

// Status implements Task.
func (b *bgTask) Status() Status {
	if b.p == nil {
		return Status{State: StateFailed}
	}
	select {
	case <-b.done:
	default:
		return Status{State: StateRunning}
	}
	b.shown.Store(true)
	ex := b.p.exit()
	switch {
	case ex.signal != "":
		return Status{State: StateKilled, Text: "killed by " + ex.signal}
	case b.killRequested.Load():
		return Status{State: StateKilled}
	default:
		return Status{State: StateCompleted, Text: "completed, exit code: " + strconv.Itoa(ex.code)}
	}
}

// Read implements Task: the stdout and stderr written since the previous
// read, joined like a foreground result, plus a note when bytes in that
// window were already dropped from memory.
func (b *bgTask) Read() Output {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.p == nil {
		d := b.spawnErr.since(b.errPos)
		b.errPos = d.next
		return Output{Text: joinStreams("", d.text)}
	}
	out := b.p.stdout.since(b.outPos)
	errD := b.p.stderr.since(b.errPos)
	b.outPos, b.errPos = out.next, errD.next
	if b.conf != nil {
		b.trip()
	}
	res := Output{Text: joinStreams(out.text, errD.text), Notes: append(b.netMarkers(), b.tripped...)}
	b.tripped = nil
	if out.dropped || errD.dropped {
		var paths []string
		for _, d := range []delta{out, errD} {
			if d.dropped && d.spillPath != "" {
				paths = append(paths, d.spillPath)
			}
		}
		where := strings.Join(paths, ", ")
		if where == "" {
			where = "(unavailable)"
		}
		res.Notes = append(res.Notes, "[some output was dropped from memory; full output: "+where+"]")
	}
	return res
}

// Kill implements Task.
func (b *bgTask) Kill(ctx context.Context) error {
	if b.p == nil {
		return nil
	}
	select {
	case <-b.done:
		return nil
	default:
	}
	b.killRequested.Store(true)
	return b.p.terminate(ctx)
}

// taskLabel is a command on one line, whitespace collapsed, at most labelMax
// runes (an ellipsis marks a cut).
func taskLabel(command string) string {
	s := strings.Join(strings.Fields(command), " ")
	if utf8.RuneCountInString(s) <= labelMax {
		return s
	}
	r := []rune(s)
	return string(r[:labelMax-1]) + "…"
}
