package session

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
)

// Clock returns the current wall time in epoch milliseconds.
type Clock func() int64

// Subscriber observes appended events synchronously, in append order. It
// must not append to the same log.
type Subscriber func(Event)

// Log is one session's append-only event log. Appends are serialized and
// subscribers see every event in seq order before Append returns. Events are
// buffered in memory and written to the Store at each Flush or Write.
//
// Over a store that reads back what it wrote (a Reader), the log keeps in
// memory every event but the streamed assistant/chunk events: a chunk is
// held only until it is handed to the store, so a session of long streamed
// answers costs memory for its messages, not for their tokens. Events,
// Len and the folds see the kept events (in seq order; a seq is then no
// longer an index); All and Prefix return the whole log, chunks included,
// reading back from the store what memory let go of. Release lets go of
// more events the same way. A log without a store, or over one that
// cannot read back, keeps every event.
type Log struct {
	appendMu sync.Mutex // serializes Append including subscriber dispatch
	flushMu  sync.Mutex // serializes writes to the store (and read-backs)
	mu       sync.Mutex // guards the fields below
	header   Header
	events   []Event        // the kept events, in seq order
	last     map[string]int // index in events of the last event of each type
	next     int            // the next seq
	pending  []Event        // events not handed to the store yet (chunks included), in seq order
	spare    []Event        // a lazily written batch's buffer, cleared, for the next pending
	stored   int            // events the store holds (seqs below it)
	loaded   []Event        // ResumeLog's whole events, until the first write after it
	lazy     bool           // the store holds writes not yet forced to disk
	clock    Clock
	store    Store
	reader   Reader         // store when it reads back (chunks then leave memory)
	subs     []subscription // copied on change, so Append reads it without allocating
	nextSub  int
}

type subscription struct {
	id int
	fn Subscriber
}

// NewLog starts an empty log for header h. store may be nil (memory only).
func NewLog(h Header, clock Clock, store Store) *Log {
	l := &Log{header: h, clock: clock, store: store}
	l.reader, _ = store.(Reader)
	return l
}

// ResumeLog wraps events already persisted in store (all of the stored
// log, seqs 0 to len(events)-1). Over a Reader the log keeps events whole
// until its first write to the store, so that showing a session just
// loaded reads nothing twice; the kept events copy their data, so the
// buffer events were read from is not held after that.
func ResumeLog(h Header, events []Event, clock Clock, store Store) *Log {
	l := NewLog(h, clock, store)
	l.next, l.stored = len(events), len(events)
	if l.reader == nil {
		l.events = events
	} else {
		// The kept events copy their data, so the buffer events were
		// read from is not held once loaded goes.
		n := 0
		for _, e := range events {
			if e.Type != TypeAssistantChunk {
				n++
			}
		}
		kept := make([]Event, 0, n)
		for _, e := range events {
			if e.Type != TypeAssistantChunk {
				e.Data = bytes.Clone(e.Data)
				e.packSources()
				kept = append(kept, e)
			}
		}
		l.events = kept
		if len(kept) < len(events) {
			l.loaded = events
		}
	}
	for i, e := range l.events {
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

// Events returns the kept events appended so far, in seq order: every
// event, except, over a Reader, the assistant/chunk events (see Log) and
// those Release let go of. The returned slice must not be modified; later
// appends and releases do not change it.
func (l *Log) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.events[:len(l.events):len(l.events)]
}

// Release lets memory go of the kept events for which drop reports true,
// when the log reads back from its store: Events, Len and Last leave them
// out from now on, and All and Prefix read them back like streamed chunks.
// It returns how many events it let go of (0 over a store that cannot
// read back, which keeps every event). drop runs with the log locked: it
// must not call the log. A slice Events returned earlier
// does not change. The agent releases what no request needs any more: the
// results and answers a compaction summary replaced.
func (l *Log) Release(drop func(Event) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reader == nil {
		return 0
	}
	var kept []Event
	for i, e := range l.events {
		switch {
		case kept != nil && !drop(e):
			kept = append(kept, e)
		case kept == nil && drop(e):
			// The first to go: the kept ones before it, then the rest.
			kept = make([]Event, i, len(l.events)-1)
			copy(kept, l.events[:i])
		}
	}
	if kept == nil {
		return 0
	}
	n := len(l.events) - len(kept)
	l.events = kept
	clear(l.last)
	for i, e := range kept {
		l.noteLast(i, e.Type)
	}
	return n
}

// Len returns the number of events Events returns.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// NextSeq returns the seq the next appended event gets: the number of
// events of the whole log.
func (l *Log) NextSeq() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Last returns the latest event of type typ, in O(1): the folds that
// read only the newest event of a type (a knob, the mode, the approval
// policy, the open turn) read it here instead of scanning the log.
// Streamed chunks are not kept over a Reader, nor released events, so it
// does not find them.
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
	ev.Seq = l.next
	ev.Time = l.clock()
	l.next++
	stored := ev
	stored.Payload = nil // subscribers get it; the log keeps only the encoding
	if l.store != nil {
		if l.pending == nil {
			l.pending, l.spare = l.spare, nil
		}
		l.pending = append(l.pending, stored)
	}
	switch {
	case l.reader == nil:
		l.noteLast(len(l.events), typ)
		l.events = append(l.events, stored)
	case typ != TypeAssistantChunk:
		stored.packSources()
		l.noteLast(len(l.events), typ)
		l.events = append(l.events, stored)
	}
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

// spareCap bounds the written batch buffer a log keeps for reuse.
const spareCap = 4096

func (l *Log) persist(ctx context.Context, durable bool) error {
	if l.store == nil {
		return nil
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	pending := l.pending
	l.pending = nil
	h := l.header
	lazy := l.lazy
	l.mu.Unlock()
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
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.pending = append(pending, l.pending...)
		return fmt.Errorf("flush session %s: %w", h.ID, err)
	}
	l.lazy = lazy
	if durable {
		l.spare = nil
	}
	if len(pending) > 0 {
		l.stored = pending[len(pending)-1].Seq + 1
		l.loaded = nil
		if !durable && cap(pending) <= spareCap {
			// Reused by the next step of the turn; a durable write (a
			// turn's end) lets it go, so an idle log holds none.
			clear(pending)
			l.spare = pending[:0]
		}
	}
	return nil
}

// All returns every event of the log, streamed chunks included, in seq
// order (Prefix of NextSeq).
func (l *Log) All(ctx context.Context) ([]Event, error) {
	return l.Prefix(ctx, l.NextSeq())
}

// Prefix returns the events of the whole log whose seq is below n,
// streamed chunks included: what a fork copies and session/load shows.
// What memory let go of is read back from the store. The returned slice
// must not be modified.
func (l *Log) Prefix(ctx context.Context, n int) ([]Event, error) {
	l.flushMu.Lock() // the store then holds exactly the seqs below stored
	defer l.flushMu.Unlock()
	l.mu.Lock()
	n = min(max(n, 0), l.next)
	if l.reader == nil {
		defer l.mu.Unlock()
		i := sort.Search(len(l.events), func(i int) bool { return l.events[i].Seq >= n })
		return l.events[:i:i], nil
	}
	loaded, stored, pending, id := l.loaded, l.stored, l.pending[:len(l.pending):len(l.pending)], l.header.ID
	l.mu.Unlock()
	var out []Event
	switch {
	case n <= len(loaded):
		return loaded[:n:n], nil
	case loaded != nil:
		out = loaded[:len(loaded):len(loaded)]
	case stored > 0:
		var err error
		if out, err = l.reader.ReadBack(ctx, id, min(n, stored)); err != nil {
			return nil, fmt.Errorf("read back session %s: %w", id, err)
		}
	}
	for _, e := range pending {
		if e.Seq >= n {
			break
		}
		out = append(out, e)
	}
	return out, nil
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
