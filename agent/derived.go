package agent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// derived is what a step reads from the log, kept current as the log
// grows: the model's history after the latest compaction (and its check),
// the folded request header, the context use and the compaction boundary.
// The log is append-only, so each event is folded once, when a reader
// first sees it (sync); a step then costs what its new events cost, not
// what the whole session does. deriveHistory(compacted(events)),
// foldHeader, usedTokens and the mode at the last header are the same
// folds from scratch: the reference this state must equal at every event
// (TestDerivedMatchesFullFolds, Config.CheckDerivation). After a
// compaction it also has the log let go of what the summary replaced
// (release), which no later request needs.
type derived struct {
	mu       sync.Mutex
	n        int // kept events folded so far (an index into the log's Events)
	lastKept int // the seq of the latest of them

	hist    deriver
	checker historyChecker
	checked int // messages of hist.out the checker has seen

	hdr          Header
	hasHdr       bool
	mode         string // the latest mode/set ("" none)
	modeAtHeader string // the mode when the latest header event was logged
	sawHdr       bool   // a header event (snapshot or delta) was logged
	used         int    // usedTokens

	// The compaction boundary: the latest user/message and the surface
	// events before it.
	surfaces      int // surface events so far
	firstSurface  int // seq of the first surface event
	lastSurface   int // seq of the latest surface event
	beforeUser    int // surface events before the latest user/message
	lastBeforeUsr int // seq of the latest surface event before it

	// What the log may let go of (releasable), once per summary.
	summarySeq int                // seq of the latest summary
	shadowed   func(seq int) bool // what it replaces (nil: no summary yet)
	span       seqRange           // the seqs it replaces, when a range ({-1, -1}: a list)
	releaseDue bool               // a summary was folded since the last release
	candidates int                // events of a releasable type folded since then
	released   bool               // the log let go of some events
	relLo      int                // the lowest and highest seq it let go of
	relHi      int
	readBack   func(n int) ([]session.Event, error) // the whole log below seq n (nil: kept events only)
	readErr    error                                // the last read-back failed: the history lacks what was released
	track      bool                                 // record each released seq (Config.CheckDerivation)
	releasedAt map[int]bool                         // the seqs released, when tracked
}

// releasableType reports whether the log may let go of events of type
// typ that a summary replaced: the results and answers (the bulk of a
// conversation), and the step markers between them. Whatever a fold or a
// reader of the log's events looks for in old turns stays: turn starts
// and ends, user and context messages, tool calls, knobs, modes, headers.
func releasableType(typ string) bool {
	switch typ {
	case session.TypeToolResult, session.TypeAssistantMessage, session.TypeStepStart, session.TypeStepEnd:
		return true
	}
	return false
}

// releasable reports whether memory may let go of e: an event of a
// releasable type that the latest summary replaced (a step marker: one
// within the span a range summary replaces). No request shows it to the
// model again (the summary stands in its place, and a later summary
// replaces at least as much). The log still has it: All and Prefix read
// it back.
func (r *derived) releasable(e session.Event) bool {
	if r.shadowed == nil || e.Seq >= r.summarySeq || !releasableType(e.Type) {
		return false
	}
	if isSurface(e.Type) {
		return r.shadowed(e.Seq)
	}
	return r.span.Start >= 0 && e.Seq >= r.span.Start && e.Seq <= r.span.End
}

// release lets the log go of what is releasable after a new summary, and
// keeps r.n an index into the log's kept events. A release copies the
// kept events (a slice Events returned earlier must not change), so it
// waits until there is at least an eighth of them to let go of: the
// copying then costs a bounded amount per released event, however long
// the session, and memory holds at most that eighth more.
func (r *derived) release(log *session.Log) {
	if !r.releaseDue || r.candidates*releaseRatio < r.n {
		return
	}
	r.releaseDue, r.candidates = false, 0
	n := log.Release(func(e session.Event) bool {
		if !r.releasable(e) {
			return false
		}
		if !r.released || e.Seq < r.relLo {
			r.relLo = e.Seq
		}
		r.relHi = max(r.relHi, e.Seq)
		r.released = true
		if r.track {
			if r.releasedAt == nil {
				r.releasedAt = map[int]bool{}
			}
			r.releasedAt[e.Seq] = true
		}
		return true
	})
	r.n -= n
}

// releaseRatio is how many kept events a release may copy per candidate.
const releaseRatio = 8

// covers reports whether sum replaces every event the log let go of, so
// that the kept events are enough to derive the history after it.
func (r *derived) covers(sum CompactSummary) bool {
	if !r.released {
		return true
	}
	if sum.ShadowedSeqs == nil {
		return sum.ShadowedRange.Start <= r.relLo && r.relHi <= sum.ShadowedRange.End
	}
	return false
}

// sync folds the events appended since the last call. events is the
// log's whole event slice (a longer prefix of the same log each time).
func (r *derived) sync(events []session.Event) {
	for _, e := range events[r.n:] {
		r.fold(events, e)
	}
	r.n = len(events)
	if r.n > 0 {
		r.lastKept = events[r.n-1].Seq
	}
}

// fold folds one event; events is the log up to at least e.
func (r *derived) fold(events []session.Event, e session.Event) {
	switch e.Type {
	case TypeCompactSummary:
		var sum CompactSummary
		if json.Unmarshal(e.Data, &sum) == nil {
			r.used, r.readErr = 0, nil
			if !r.covers(sum) && r.readBack != nil {
				// The summary leaves in place some of what an earlier
				// one replaced (an older build's list): derive from
				// the whole log.
				whole, err := r.readBack(e.Seq + 1)
				if err != nil {
					r.readErr = fmt.Errorf("the history needs events memory let go of: %w", err)
				} else {
					events = whole
				}
			}
			r.rederive(events, e.Seq)
			r.summarySeq, r.shadowed, r.releaseDue = e.Seq, sum.shadows(), true
			r.span = sum.ShadowedRange
			if sum.ShadowedSeqs != nil {
				r.span = seqRange{Start: -1, End: -1}
			}
			return
		}
	case session.TypeAssistantMessage:
		var m struct {
			Usage *llm.Usage `json:"usage"`
		}
		if json.Unmarshal(e.Data, &m) == nil && m.Usage != nil {
			r.used = m.Usage.InputTokens + m.Usage.OutputTokens
			if m.Usage.CacheReadTokens != nil {
				r.used += *m.Usage.CacheReadTokens
			}
		}
	case session.TypeRequestHeader:
		var he headerEvent
		if e.Decode(&he) == nil {
			r.hdr, r.hasHdr = he.Header, true
		}
		r.modeAtHeader, r.sawHdr = r.mode, true
	case session.TypeRequestHeaderDelta:
		var d headerDelta
		if e.Decode(&d) == nil && r.hasHdr {
			r.hdr = applyDelta(r.hdr, d)
		}
		r.modeAtHeader, r.sawHdr = r.mode, true
	case session.TypeModeSet:
		if m, ok := modeOf(e); ok {
			r.mode = m
		}
	}
	if releasableType(e.Type) {
		r.candidates++
	}
	if !isSurface(e.Type) {
		return
	}
	if e.Type == session.TypeUserMessage {
		r.beforeUser, r.lastBeforeUsr = r.surfaces, r.lastSurface
	}
	if r.surfaces == 0 {
		r.firstSurface = e.Seq
	}
	r.surfaces++
	r.lastSurface = e.Seq
	r.history(e)
}

// history feeds one surface event (of the compacted log) to the history
// derivation, as deriveHistory does.
func (r *derived) history(e session.Event) { r.hist.event(e) }

// rederive starts the history over after the compact/summary at seq:
// from compacted(events up to it), once per compaction.
func (r *derived) rederive(events []session.Event, seq int) {
	end := len(events)
	for end > 0 && events[end-1].Seq > seq {
		end--
	}
	r.hist, r.checker, r.checked = deriver{}, historyChecker{}, 0
	eachCompactedSurface(events[:end], r.history)
}

// messages returns the history of the next request and the seq of each
// message's event (deriveHistory(compacted(events))), with checkHistory's
// verdict (or why the history is incomplete: a read-back that failed).
// The returned slices must not be modified.
func (r *derived) messages() ([]llm.Message, []int, error) {
	h := &r.hist
	for ; r.checked < len(h.out); r.checked++ {
		r.checker.add(h.out[r.checked], h.seqs[r.checked])
	}
	msgs, seqs := h.out[:len(h.out):len(h.out)], h.seqs[:len(h.seqs):len(h.seqs)]
	if r.readErr != nil {
		return msgs, seqs, r.readErr
	}
	if len(h.open) == 0 && len(h.held) == 0 {
		return msgs, seqs, r.checker.done()
	}
	// Calls still open: the same synthetic results and held messages
	// deriveHistory's final closeOpen adds, on copies.
	tail := deriver{open: slices.Clone(h.open), held: slices.Clone(h.held), heldSeqs: slices.Clone(h.heldSeqs)}
	tail.closeOpen()
	c := r.checker.clone()
	for i := range tail.out {
		c.add(tail.out[i], tail.seqs[i])
	}
	return append(msgs, tail.out...), append(seqs, tail.seqs...), c.done()
}

// beforeBoundary returns the history before the latest user/message
// (deriveHistory(compacted(events[:boundary])) in compact).
func (r *derived) beforeBoundary() []llm.Message {
	if !r.hist.hasUser {
		return nil
	}
	return slices.Clip(r.hist.out[:r.hist.userAt])
}

// historyChecker is checkHistory fed one message at a time.
type historyChecker struct {
	open map[string]bool
	err  error
}

func (c *historyChecker) add(m llm.Message, seq int) {
	if c.err != nil {
		return
	}
	if c.open == nil {
		c.open = map[string]bool{}
	}
	c.err = checkMessage(c.open, m, seq)
}

func (c *historyChecker) clone() historyChecker {
	return historyChecker{open: maps.Clone(c.open), err: c.err}
}

func (c *historyChecker) done() error {
	if c.err != nil {
		return c.err
	}
	return checkEnd(c.open)
}

// derive brings the session's derived state up to its log and returns it
// locked; the caller unlocks r.mu.
func (s *Session) derive() *derived {
	r := &s.req
	r.mu.Lock()
	if r.readBack == nil {
		r.readBack = func(n int) ([]session.Event, error) {
			return s.log.Prefix(context.Background(), n)
		}
	}
	r.track = s.rt.cfg.CheckDerivation
	r.sync(s.log.Events())
	r.release(s.log)
	return r
}

// headerMode is the mode the model saw in the latest logged request.
func (r *derived) headerMode() string { return cmp.Or(r.modeAtHeader, DefaultMode) }

// verify compares the state with the same folds computed from scratch
// over events, the whole log r has folded (what the log released
// included): the history and its check, the header, the context use, the
// compaction boundary and the mode at the last header. It returns the
// first difference.
func (r *derived) verify(events []session.Event) error {
	at := -1 // the seq of the last event folded, for the messages
	if len(events) > 0 {
		at = events[len(events)-1].Seq
	}
	msgs, seqs, err := r.messages()
	wantMsgs, wantSeqs := deriveHistory(compacted(events))
	wantErr := checkHistory(wantMsgs, wantSeqs)
	if !sameMessages(msgs, wantMsgs) || !slices.Equal(seqs, wantSeqs) {
		return fmt.Errorf("derived history differs from the log's after event #%d:\n got %s %v\nwant %s %v", at,
			jsonx.MustMarshal(msgs), seqs, jsonx.MustMarshal(wantMsgs), wantSeqs)
	}
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		return fmt.Errorf("derived history check %v, the log's %v (after event #%d)", err, wantErr, at)
	}
	h, ok := foldHeader(events)
	if ok != r.hasHdr || !sameHeader(h, r.hdr) {
		return fmt.Errorf("derived request header differs from the log's after event #%d", at)
	}
	if u := usedTokens(events); u != r.used {
		return fmt.Errorf("derived context use %d, the log's %d (after event #%d)", r.used, u, at)
	}
	hi := max(lastIndex(events, session.TypeRequestHeader), lastIndex(events, session.TypeRequestHeaderDelta))
	if (hi >= 0) != r.sawHdr || hi >= 0 && foldMode(events[:hi+1]) != r.headerMode() {
		return fmt.Errorf("derived mode at the last header %q, the log's %q", r.modeAtHeader, foldMode(events[:hi+1]))
	}
	boundary := -1
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == session.TypeUserMessage {
			boundary = i
			break
		}
	}
	var before []int
	for _, e := range events[:max(boundary, 0)] {
		if isSurface(e.Type) {
			before = append(before, e.Seq)
		}
	}
	if len(before) != r.beforeUser || len(before) > 0 && (before[0] != r.firstSurface || before[len(before)-1] != r.lastBeforeUsr) {
		return fmt.Errorf("derived compaction boundary (%d events, %d…%d) differs from the log's %v", r.beforeUser, r.firstSurface, r.lastBeforeUsr, before)
	}
	// (compact reads it only when the latest summary came before that
	// message: one compaction a turn.)
	if boundary >= 0 && lastIndex(events, TypeCompactSummary) < boundary {
		want, _ := deriveHistory(compacted(events[:boundary]))
		if got := r.beforeBoundary(); !sameMessages(got, want) {
			return fmt.Errorf("derived history before the latest user message differs from the log's (after event #%d)", at)
		}
	}
	return nil
}

// sameMessages reports whether two histories encode the same.
func sameMessages(a, b []llm.Message) bool {
	return len(a) == len(b) && (len(a) == 0 || bytes.Equal(jsonx.MustMarshal(a), jsonx.MustMarshal(b)))
}

// verifyLog compares the folds a log keeps at hand (session.Log.Last)
// with the same folds computed from scratch over its events.
func verifyLog(log *session.Log, def approval.Policy, knobs []Knob) error {
	events := log.Events()
	for _, k := range knobs {
		if got, want := lastKnob(log, k), foldKnob(events, k); got != want {
			return fmt.Errorf("knob %s: the log keeps %q, its events fold to %q", k.ID, got, want)
		}
	}
	if got, want := lastMode(log), foldMode(events); got != want {
		return fmt.Errorf("mode: the log keeps %q, its events fold to %q", got, want)
	}
	if got, want := approval.FoldLog(log, def), approval.Fold(events, def); got != want {
		return fmt.Errorf("approval policy: the log keeps %q, its events fold to %q", got, want)
	}
	if got, want := log.LastTurn(), session.LastTurn(events); got != want {
		return fmt.Errorf("last turn: the log keeps %d, its events fold to %d", got, want)
	}
	if got, want := log.TurnOpen(), session.TurnOpen(events); got != want {
		return fmt.Errorf("open turn: the log keeps %v, its events fold to %v", got, want)
	}
	return nil
}

// verifyKept compares the events the log keeps in memory with the whole
// log all (read back from the store where memory let go of it): the same
// events, byte for byte, less the streamed chunks and what r released.
func (r *derived) verifyKept(log *session.Log, all []session.Event) error {
	kept := log.Events()
	i := 0
	for _, e := range all {
		if i < len(kept) && kept[i].Seq == e.Seq {
			a, _ := kept[i].MarshalJSON()
			b, _ := e.MarshalJSON()
			if !bytes.Equal(a, b) {
				return fmt.Errorf("the log keeps event #%d as %s, its store has %s", e.Seq, a, b)
			}
			i++
			continue
		}
		if e.Type != session.TypeAssistantChunk && !r.wasReleased(e) {
			return fmt.Errorf("the log does not keep event #%d (%s)", e.Seq, e.Type)
		}
	}
	if i < len(kept) {
		return fmt.Errorf("the log keeps event #%d, which its store does not have", kept[i].Seq)
	}
	return nil
}

// wasReleased reports whether r had the log let go of e (tracked seqs).
func (r *derived) wasReleased(e session.Event) bool { return r.releasedAt[e.Seq] }

// folded returns the prefix of the whole log all that r has folded: up
// to the last kept event it synced.
func (r *derived) folded(all []session.Event) []session.Event {
	if r.n == 0 {
		return nil
	}
	kept := r.lastKept
	i := sort.Search(len(all), func(i int) bool { return all[i].Seq > kept })
	return all[:i]
}

// checkDerivation is Config.CheckDerivation's comparison for one step;
// r is locked and synced.
func (s *Session) checkDerivation(r *derived) error {
	def := approval.PolicyAsk
	if s.rt.cfg.Approval != nil {
		def = s.rt.cfg.Approval.DefaultPolicy()
	}
	all, err := s.log.All(context.Background())
	if err == nil {
		err = r.verify(r.folded(all))
	}
	if err == nil {
		err = verifyLog(s.log, def, s.rt.knobs())
	}
	if err == nil {
		err = r.verifyKept(s.log, all)
	}
	if err != nil {
		return fmt.Errorf("incremental derivation: %w", err)
	}
	return nil
}
