// Package storetest is the conformance suite every session.Store
// implementation runs (session-log contract §§ 6–7): byte-identical
// round trips, seq continuity, listing, crash repair persisted on load,
// concurrency, the not-found error and one owner per session.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
)

// Opener opens the store kept in dir (an empty directory the first time).
// Opening it twice on one dir gives two stores sharing the same sessions,
// as two processes would.
type Opener func(t *testing.T, dir string) session.Store

// Run runs the suite. Each case opens its stores on a fresh t.TempDir() and
// closes them when the subtest ends.
func Run(t *testing.T, open Opener) {
	mk := func(t *testing.T) session.Store {
		st := open(t, t.TempDir())
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	t.Run("AppendReloadIdentical", func(t *testing.T) { testAppendReload(t, mk(t)) })
	t.Run("FlushThroughLog", func(t *testing.T) { testFlushThroughLog(t, mk(t)) })
	t.Run("LogLetsChunksGo", func(t *testing.T) { testLogLetsChunksGo(t, mk(t)) })
	t.Run("LogReleases", func(t *testing.T) { testLogReleases(t, mk(t)) })
	t.Run("SeqContinuity", func(t *testing.T) { testSeqContinuity(t, mk(t)) })
	t.Run("EmptyBatch", func(t *testing.T) { testEmptyBatch(t, mk(t)) })
	t.Run("ManySessionsList", func(t *testing.T) { testManySessions(t, mk(t)) })
	t.Run("CrashRepair", func(t *testing.T) { testCrashRepair(t, mk(t)) })
	t.Run("CrashRepairNoStep", func(t *testing.T) { testCrashRepairNoStep(t, mk(t)) })
	t.Run("ConcurrentSessions", func(t *testing.T) { testConcurrentSessions(t, mk(t)) })
	t.Run("ConcurrentSameSession", func(t *testing.T) { testConcurrentSameSession(t, mk(t)) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, mk(t)) })
	t.Run("CanceledContext", func(t *testing.T) { testCanceled(t, mk(t)) })
	t.Run("OwnerLoadRefused", func(t *testing.T) { testOwnerLoadRefused(t, open) })
	t.Run("OwnerRelease", func(t *testing.T) { testOwnerRelease(t, open) })
	t.Run("OwnerCloseReleases", func(t *testing.T) { testOwnerCloseReleases(t, open) })
	t.Run("OwnerHeldNotRepaired", func(t *testing.T) { testOwnerHeldNotRepaired(t, open) })
	t.Run("OwnerReentrant", func(t *testing.T) { testOwnerReentrant(t, open) })
	t.Run("OwnerLogClose", func(t *testing.T) { testOwnerLogClose(t, open) })
	runLifecycle(t, open, mk)
	runIndex(t, open)
}

func testAppendReload(t *testing.T, st session.Store) {
	ctx := context.Background()
	h := session.Header{ID: "sess-ü/1 ~x", CreatedAt: BaseTime, Cwd: "/home/u/project <a&b>", ParentSession: "parent-1", SeedLength: 3}
	g := NewGen(0)
	g.Turn(1, 3)
	first := g.Take()
	require.NoError(t, st.Append(ctx, h, first))

	g.Turn(2, 0)
	// An event written surfaceOp-first (the crash closer's key order) with
	// sourceEventSeqs, an event with a replace surfaceOp and one with
	// escaped characters in data must all round-trip.
	g.TurnStart(3, "line1\nline2\t\"quoted\" \\ \u0001 \U0001F600")
	ev := session.Event{Type: session.TypeToolResult, Seq: g.Next(), Time: 7, Data: []byte(`{"turn":3,"step":1,"callId":"x","content":[],"isError":true,"error":{"name":"InterruptedError","code":"interrupted"}}`),
		SourceEventSeqs: []int{1}, SurfaceOp: session.SurfaceAppend, SurfaceOpFirst: true}
	g.Events = append(g.Events, ev)
	g.next++
	ev2 := session.Event{Type: session.TypeContextMessage, Seq: g.Next(), Time: 8, Data: []byte(`{"content":[],"source":{"kind":"plugin","plugin":"p"}}`),
		SourceEventSeqs: []int{}, SurfaceOp: []byte(`{"op":"replace","start":1,"end":2}`)}
	g.Events = append(g.Events, ev2)
	g.next++
	g.Add("plugin/custom", map[string]any{"nested": map[string]any{"a": []any{1.5, nil, true, "s"}}}, nil)
	g.TurnEnd(3)
	require.NoError(t, st.Append(ctx, h, g.Take()))

	gotH, got, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, h, gotH)
	require.Equal(t, Lines(t, g.Events), Lines(t, got))
	require.True(t, got[len(got)-4].SurfaceOpFirst, "surfaceOp-first order must survive")
	require.False(t, got[len(got)-3].SurfaceOpFirst)

	// A second load is identical and the session continues at the next seq.
	_, again, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, Lines(t, got), Lines(t, again))
	g.Turn(4, 1)
	require.NoError(t, st.Append(ctx, h, g.Take()))
	_, all, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, Lines(t, g.Events), Lines(t, all))
}

func testFlushThroughLog(t *testing.T, st session.Store) {
	ctx := context.Background()
	var now int64 = 100
	clock := func() int64 { now++; return now }
	h := session.Header{ID: "log-1", CreatedAt: 99}
	l := session.NewLog(h, clock, st)
	require.NoError(t, l.Flush(ctx)) // nothing to write: no session yet
	_, _, err := st.Load(ctx, h.ID)
	require.ErrorIs(t, err, session.ErrNotFound)

	l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "injection", Source: session.Source{Kind: "plugin", Plugin: "x"}}})
	l.Append(session.TypeContextMessage, session.Message{Content: []session.Block{session.TextBlock("<ctx>")}, Source: session.Source{Kind: "plugin", Plugin: "x"}})
	l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}})
	require.NoError(t, l.Flush(ctx))
	l.Append(session.TypeTurnStart, session.TurnStart{Turn: 2, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: 2, Reason: session.EndReason{Kind: session.EndRejected, Reason: "no"}})
	require.NoError(t, l.Flush(ctx))

	gotH, got, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, h, gotH)
	require.Equal(t, Lines(t, l.Events()), Lines(t, got))

	resumed := session.ResumeLog(gotH, got, clock, st)
	resumed.Append(session.TypeTodoWrite, session.TodoWrite{Todos: []session.Todo{{Content: "a", Status: "pending"}}})
	require.NoError(t, resumed.Flush(ctx))
	_, got, err = st.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, 6, len(got))
}

// completeTurnAt returns turn/start, user/message, turn/end from seq first.
func completeTurnAt(first, turn int) []session.Event {
	g := NewGen(first)
	g.TurnStart(turn, "hello")
	g.TurnEnd(turn)
	return g.Events
}

func testSeqContinuity(t *testing.T, st session.Store) {
	ctx := context.Background()
	h := session.Header{ID: "seq", CreatedAt: 1, Cwd: "/w"}

	err := st.Append(ctx, h, completeTurnAt(1, 1))
	require.EqualError(t, err, `append seq mismatch for "seq": expected 0 at index 0, got 1`)
	_, _, err = st.Load(ctx, h.ID)
	require.ErrorIs(t, err, session.ErrNotFound, "a refused first batch must not materialize")

	batch := completeTurnAt(0, 1) // seqs 0..2
	require.NoError(t, st.Append(ctx, h, batch))

	bad := completeTurnAt(3, 2)
	bad[1].Seq = 5
	require.EqualError(t, st.Append(ctx, h, bad), `append seq mismatch for "seq": expected 4 at index 1, got 5`)
	require.EqualError(t, st.Append(ctx, h, batch), `append seq mismatch for "seq": expected 3 at index 0, got 0`)

	_, got, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, Lines(t, batch), Lines(t, got), "a refused batch must leave nothing behind")

	require.NoError(t, st.Append(ctx, h, completeTurnAt(3, 2)))
	_, got, err = st.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, 6, len(got))
}

func testEmptyBatch(t *testing.T, st session.Store) {
	ctx := context.Background()
	require.NoError(t, st.Append(ctx, session.Header{ID: "empty", CreatedAt: 1}, nil))
	hs, err := st.List(ctx)
	require.NoError(t, err)
	require.Empty(t, hs, "a session without events is not stored")
	_, _, err = st.Load(ctx, "empty")
	require.ErrorIs(t, err, session.ErrNotFound)
}

func testManySessions(t *testing.T, st session.Store) {
	ctx := context.Background()
	cwds := []string{"", "/a", "/b/c", "/unicode/ĉ"}
	var want []session.Header
	for i := 0; i < 40; i++ {
		h := session.Header{ID: fmt.Sprintf("s-%02d", i), CreatedAt: BaseTime + int64(i%7), Cwd: cwds[i%len(cwds)]}
		if i%5 == 0 {
			h.ParentSession = "s-00"
		}
		if i%6 == 0 {
			h.SeedLength = 3
		}
		require.NoError(t, st.Append(ctx, h, completeTurnAt(0, 1)))
		want = append(want, h)
	}
	got, err := st.List(ctx)
	require.NoError(t, err)
	byID := func(hs []session.Header) {
		sort.Slice(hs, func(i, j int) bool { return hs[i].ID < hs[j].ID })
	}
	byID(want)
	byID(got)
	require.Equal(t, want, got)
	for _, h := range want {
		gh, evs, err := st.Load(ctx, h.ID)
		require.NoError(t, err)
		require.Equal(t, h, gh)
		require.Equal(t, 3, len(evs))
	}
}

// interruptedLine is the exact closer a crash leaves for an unanswered call.
func interruptedLine(seq int, time int64, turn, step int, callID, seqs string) string {
	line := fmt.Sprintf(`{"type":"tool/result","seq":%d,"time":%d,"data":{"turn":%d,"step":%d,"callId":%q,"content":[{"type":"text","text":"Tool call interrupted by a crash; no result was recorded."}],"isError":true,"error":{"name":"InterruptedError","code":"interrupted"}},"surfaceOp":"append"`, seq, time, turn, step, callID)
	if seqs != "" {
		line += `,"sourceEventSeqs":` + seqs
	}
	return line + "}"
}

func testCrashRepair(t *testing.T, st session.Store) {
	ctx := context.Background()
	h := session.Header{ID: "crashed", CreatedAt: 5, Cwd: "/proj"}
	g := NewGen(0)
	g.Turn(1, 2)
	g.TurnStart(2, "do three things")
	// step 1 completes; step 2 announces three calls, runs two, answers one.
	g.StepWithTool(2, 1, 1, []string{"a1"}, 1, 1, true)
	g.StepWithTool(2, 2, 2, []string{"c1", "c2", "c3"}, 2, 1, false)
	require.NoError(t, st.Append(ctx, h, g.Events))
	var c2Seq int
	for _, e := range g.Events {
		var c session.ToolCall
		if e.Type == session.TypeToolCall && e.Decode(&c) == nil && c.CallID == "c2" {
			c2Seq = e.Seq
		}
	}
	n := len(g.Events)
	last := g.Events[n-1].Time

	_, got, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	want := append(Lines(t, g.Events),
		interruptedLine(n, last, 2, 2, "c2", fmt.Sprintf("[%d]", c2Seq)),
		interruptedLine(n+1, last, 2, 2, "c3", ""),
		fmt.Sprintf(`{"type":"step/end","seq":%d,"time":%d,"data":{"turn":2,"step":2}}`, n+2, last),
		fmt.Sprintf(`{"type":"turn/end","seq":%d,"time":%d,"data":{"turn":2,"reason":{"kind":"interrupted"}}}`, n+3, last),
	)
	require.Equal(t, want, Lines(t, got))

	// The closers were persisted: a second load returns the same log and
	// appends nothing more.
	_, again, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, want, Lines(t, again))

	// Appends continue after the closers.
	require.EqualError(t, st.Append(ctx, h, completeTurnAt(n, 3)),
		fmt.Sprintf(`append seq mismatch for "crashed": expected %d at index 0, got %d`, n+4, n))
	require.NoError(t, st.Append(ctx, h, completeTurnAt(n+4, 3)))
	_, final, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, n+7, len(final))
}

func testCrashRepairNoStep(t *testing.T, st session.Store) {
	ctx := context.Background()
	h := session.Header{ID: "crashed-early", CreatedAt: 5}
	g := NewGen(0)
	g.TurnStart(1, "hi")
	require.NoError(t, st.Append(ctx, h, g.Events))
	_, got, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, append(Lines(t, g.Events),
		fmt.Sprintf(`{"type":"turn/end","seq":2,"time":%d,"data":{"turn":1,"reason":{"kind":"interrupted"}}}`, BaseTime+1)),
		Lines(t, got))
}

func testConcurrentSessions(t *testing.T, st session.Store) {
	ctx := context.Background()
	const sessions, turns = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, sessions*turns*2+64)
	stop := make(chan struct{})
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			h := session.Header{ID: fmt.Sprintf("conc-%d", s), CreatedAt: int64(s), Cwd: fmt.Sprintf("/cwd/%d", s%3)}
			g := NewGen(0)
			for turn := 1; turn <= turns; turn++ {
				g.Turn(turn, 2)
				if err := st.Append(ctx, h, g.Take()); err != nil {
					errs <- err
					return
				}
				_, evs, err := st.Load(ctx, h.ID)
				if err != nil {
					errs <- err
					return
				}
				if len(evs) != len(g.Events) {
					errs <- fmt.Errorf("%s: loaded %d events, want %d", h.ID, len(evs), len(g.Events))
				}
			}
		}(s)
	}
	var lw sync.WaitGroup
	lw.Add(1)
	go func() { // concurrent listing
		defer lw.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := st.List(ctx); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	lw.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	hs, err := st.List(ctx)
	require.NoError(t, err)
	require.Len(t, hs, sessions)
}

func testConcurrentSameSession(t *testing.T, st session.Store) {
	ctx := context.Background()
	h := session.Header{ID: "shared", CreatedAt: 1}
	next := 0
	for round := 1; round <= 6; round++ {
		batch := completeTurnAt(next, round)
		const writers = 4
		results := make([]error, writers)
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				results[w] = st.Append(ctx, h, batch)
			}(w)
		}
		wg.Wait()
		ok := 0
		for _, err := range results {
			if err == nil {
				ok++
				continue
			}
			require.EqualError(t, err, fmt.Sprintf(`append seq mismatch for "shared": expected %d at index 0, got %d`, next+3, next))
		}
		require.Equal(t, 1, ok, "exactly one writer of round %d must win", round)
		next += 3
	}
	_, got, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, next, len(got))
}

func testNotFound(t *testing.T, st session.Store) {
	ctx := context.Background()
	require.NoError(t, st.Append(ctx, session.Header{ID: "present", CreatedAt: 1}, completeTurnAt(0, 1)))
	for _, id := range []string{"missing", "présent", "a/b"} {
		_, _, err := st.Load(ctx, id)
		require.Error(t, err)
		require.True(t, errors.Is(err, session.ErrNotFound), "%v must wrap ErrNotFound", err)
		require.Equal(t, fmt.Sprintf("session %q not found", id), err.Error())
	}
}

func testCanceled(t *testing.T, st session.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h := session.Header{ID: "c", CreatedAt: 1}
	require.ErrorIs(t, st.Append(ctx, h, completeTurnAt(0, 1)), context.Canceled)
	require.NoError(t, st.Append(context.Background(), h, completeTurnAt(0, 1)))
	_, _, err := st.Load(ctx, h.ID)
	require.ErrorIs(t, err, context.Canceled)
	_, err = st.List(ctx)
	require.ErrorIs(t, err, context.Canceled)
}
