package session

import (
	"context"
	"fmt"
	"sync"
)

// Clock returns the current wall time in epoch milliseconds.
type Clock func() int64

// Subscriber observes appended events synchronously, in append order. It
// must not append to the same log.
type Subscriber func(Event)

// Log is one session's append-only event log. Appends are serialized and
// subscribers see every event in seq order before Append returns. Events are
// buffered in memory and written to the Store at each Flush.
type Log struct {
	appendMu sync.Mutex // serializes Append including subscriber dispatch
	flushMu  sync.Mutex // serializes writes to the store
	mu       sync.Mutex // guards the fields below
	header   Header
	events   []Event
	last     map[string]int // index in events of the last event of each type
	flushed  int
	lazy     bool // the store holds writes not yet forced to disk
	clock    Clock
	store    Store
	subs     []subscription // copied on change, so Append reads it without allocating
	nextSub  int
}

type subscription struct {
	id int
	fn Subscriber
}

// NewLog starts an empty log for header h. store may be nil (memory only).
func NewLog(h Header, clock Clock, store Store) *Log {
	return &Log{header: h, clock: clock, store: store}
}

// ResumeLog wraps events already persisted in store.
func ResumeLog(h Header, events []Event, clock Clock, store Store) *Log {
	l := NewLog(h, clock, store)
	l.events = events
	l.flushed = len(events)
	for i, e := range events {
		l.noteLast(i, e.Type)
	}
	return l
}

// Header returns the log's header.
func (l *Log) Header() Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.header
}

// ID returns the session id.
func (l *Log) ID() string { return l.Header().ID }

// Events returns the events appended so far. The returned slice must not be
// modified; later appends do not change it.
func (l *Log) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.events[:len(l.events):len(l.events)]
}

// Len returns the number of events (the next seq).
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// Last returns the latest event of type typ, in O(1): the folds that
// read only the newest event of a type (a knob, the mode, the approval
// policy, the open turn) read it here instead of scanning the log.
func (l *Log) Last(typ string) (Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, ok := l.last[typ]
	if !ok {
		return Event{}, false
	}
	return l.events[i], true
}

// LastSeq returns the seq of the latest event of type typ, or -1.
func (l *Log) LastSeq(typ string) int {
	if e, ok := l.Last(typ); ok {
		return e.Seq
	}
	return -1
}

func (l *Log) noteLast(i int, typ string) {
	if l.last == nil {
		l.last = map[string]int{}
	}
	l.last[typ] = i
}

// Subscribe registers fn and returns a function that removes it.
func (l *Log) Subscribe(fn Subscriber) (unsubscribe func()) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	id := l.nextSub
	l.nextSub++
	l.subs = append(append([]subscription(nil), l.subs...), subscription{id, fn})
	l.mu.Unlock()
	return func() {
		l.appendMu.Lock()
		defer l.appendMu.Unlock()
		l.mu.Lock()
		kept := make([]subscription, 0, len(l.subs))
		for _, s := range l.subs {
			if s.id != id {
				kept = append(kept, s)
			}
		}
		l.subs = kept
		l.mu.Unlock()
	}
}

// AppendOption adjusts an appended event.
type AppendOption func(*Event)

// WithSourceSeqs sets sourceEventSeqs (surface events only).
func WithSourceSeqs(seqs []int) AppendOption {
	return func(e *Event) { e.SourceEventSeqs = seqs }
}

// Append adds one event of type typ with data (a payload struct, marshalled
// in declared field order) and notifies subscribers. Surface types get
// surfaceOp "append".
func (l *Log) Append(typ string, data any, opts ...AppendOption) Event {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	ev := Event{Type: typ, Data: Data(data), Payload: data}
	if IsSurface(typ) {
		ev.SurfaceOp = SurfaceAppend
	}
	for _, o := range opts {
		o(&ev)
	}
	l.mu.Lock()
	ev.Seq = len(l.events)
	ev.Time = l.clock()
	stored := ev
	stored.Payload = nil // subscribers get it; the log keeps only the encoding
	l.noteLast(len(l.events), typ)
	l.events = append(l.events, stored)
	subs := l.subs
	l.mu.Unlock()
	for _, s := range subs {
		s.fn(ev)
	}
	return ev
}

// Flush makes every event durable in the store: pending events are
// appended with fsync, and earlier lazy writes are synced.
func (l *Log) Flush(ctx context.Context) error {
	return l.persist(ctx, true)
}

// Write hands pending events to the store without forcing them to disk when
// the store supports it (session.LazyWriter); they then survive a crash of
// this process. Otherwise it is Flush.
func (l *Log) Write(ctx context.Context) error {
	return l.persist(ctx, false)
}

func (l *Log) persist(ctx context.Context, durable bool) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	pending := l.events[l.flushed:]
	h := l.header
	n := len(l.events)
	lazy := l.lazy
	l.mu.Unlock()
	if l.store == nil {
		return nil
	}
	lw, canLazy := l.store.(LazyWriter)
	var err error
	switch {
	case len(pending) > 0 && !durable && canLazy:
		err = lw.Write(ctx, h, pending)
		lazy = true
	case len(pending) > 0:
		err = l.store.Append(ctx, h, pending)
		lazy = false
	case durable && lazy && canLazy:
		err = lw.Sync(ctx, h.ID)
		lazy = false
	}
	if err != nil {
		return fmt.Errorf("flush session %s: %w", h.ID, err)
	}
	l.mu.Lock()
	l.flushed = n
	l.lazy = lazy
	l.mu.Unlock()
	return nil
}

// Close makes the log durable (Flush) and then gives up the store's hold
// on the session (session.Owner), so another process may load it. A
// failed flush keeps the hold: the events are still only here.
func (l *Log) Close(ctx context.Context) error {
	if err := l.Flush(ctx); err != nil {
		return err
	}
	o, ok := l.store.(Owner)
	if !ok {
		return nil
	}
	if err := o.Release(l.ID()); err != nil {
		return fmt.Errorf("release session %s: %w", l.ID(), err)
	}
	return nil
}
