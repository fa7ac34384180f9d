package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
)

// runIndex is the part of the suite for session.Indexer: pages read from
// the store's index equal Paginate over a full scan, stay current as
// sessions are written, renamed by their first message, deleted, and
// written by another store on the same data (another process), and one
// session is found by its id alone.
func runIndex(t *testing.T, open Opener) {
	t.Run("IndexPages", func(t *testing.T) { testIndexPages(t, open) })
	t.Run("IndexOtherWriter", func(t *testing.T) { testIndexOtherWriter(t, open) })
}

func indexer(t *testing.T, st session.Store) session.Indexer {
	t.Helper()
	x, ok := st.(session.Indexer)
	require.True(t, ok, "the store must implement session.Indexer")
	return x
}

// pageAll pages through q, returning the ids in order.
func pageAll(t *testing.T, x session.Indexer, q session.ListQuery) []string {
	t.Helper()
	var ids []string
	for {
		p, err := x.Page(context.Background(), q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Sessions), max(q.Limit, 1))
		for _, s := range p.Sessions {
			ids = append(ids, s.Header.ID)
		}
		if p.Next == "" {
			return ids
		}
		q.Cursor = p.Next
	}
}

// titledTurn is a complete turn whose prompt is text, its events timed
// from t0.
func titledTurn(first, turn int, t0 int64, text string) []session.Event {
	g := NewGen(first)
	g.TurnStart(turn, text)
	g.TurnEnd(turn)
	evs := g.Take()
	for i := range evs {
		evs[i].Time = t0 + int64(i)
	}
	return evs
}

func testIndexPages(t *testing.T, open Opener) {
	ctx := context.Background()
	dir := t.TempDir()
	st := open(t, dir)
	t.Cleanup(func() { _ = st.Close() })
	x := indexer(t, st)
	// Sessions written before the first listing, and after it.
	const n = 23
	next := map[string]int{}
	write := func(i int, t0 int64, text string) {
		h := session.Header{ID: fmt.Sprintf("s%02d", i), CreatedAt: int64(i), Cwd: fmt.Sprintf("/w/%d", i%3)}
		if i%5 == 4 {
			h.ParentSession = "s00"
		}
		evs := titledTurn(next[h.ID], next[h.ID]/4+1, t0, text)
		next[h.ID] += len(evs)
		require.NoError(t, st.Append(ctx, h, evs))
	}
	for i := range n / 2 {
		write(i, int64(1000*(i%7)), fmt.Sprintf("task %d\nmore lines", i))
	}
	p, err := x.Page(ctx, session.ListQuery{Limit: 4})
	require.NoError(t, err)
	require.Len(t, p.Sessions, 4)
	for i := n / 2; i < n; i++ {
		write(i, int64(1000*(i%7)), fmt.Sprintf("task %d", i))
	}
	// s03 is written again: it moves to the front, keeping its title.
	write(3, 50_000, "a later prompt")

	check := func() {
		t.Helper()
		sums, err := summarizer(t, st).Summaries(ctx)
		require.NoError(t, err)
		for _, q := range []session.ListQuery{
			{Limit: 5},
			{Limit: 1},
			{Limit: 50},
			{Limit: 4, Cwd: "/w/1/"},
			{Limit: 3, Keep: func(s session.Summary) bool { return s.Header.ParentSession == "" }},
		} {
			var want []string
			wq := q
			for {
				wp, err := session.Paginate(sums, wq)
				require.NoError(t, err)
				for _, s := range wp.Sessions {
					want = append(want, s.Header.ID)
				}
				if wp.Next == "" {
					break
				}
				wq.Cursor = wp.Next
			}
			require.Equal(t, want, pageAll(t, x, q), "query %+v", q)
		}
	}
	check()
	ids := pageAll(t, x, session.ListQuery{Limit: 7})
	require.Len(t, ids, n)
	require.Equal(t, "s03", ids[0], "the latest write first")

	sm, err := x.Lookup(ctx, "s03")
	require.NoError(t, err)
	require.Equal(t, "task 3", sm.Title, "the first message names the session")
	require.Equal(t, int64(50_002), sm.UpdatedAt)
	require.Equal(t, session.Header{ID: "s03", CreatedAt: 3, Cwd: "/w/0"}, sm.Header)
	_, err = x.Lookup(ctx, "nope")
	require.ErrorIs(t, err, session.ErrNotFound)

	// A deleted session leaves the pages.
	release(t, st, "s07")
	require.NoError(t, deleter(t, st).Delete(ctx, "s07"))
	require.NotContains(t, pageAll(t, x, session.ListQuery{Limit: 6}), "s07")
	check()

	// A second store on the same data (a later process) sees the same.
	again := open(t, dir)
	t.Cleanup(func() { _ = again.Close() })
	require.Equal(t, pageAll(t, x, session.ListQuery{Limit: 6}), pageAll(t, indexer(t, again), session.ListQuery{Limit: 6}))
	sm2, err := indexer(t, again).Lookup(ctx, "s03")
	require.NoError(t, err)
	require.Equal(t, sm, sm2)
}

// testIndexOtherWriter: sessions one store writes appear, in order, in
// the pages of another store on the same data that already listed.
func testIndexOtherWriter(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := owners(t, open)
	require.NoError(t, a.Append(ctx, session.Header{ID: "x", CreatedAt: 1, Cwd: "/w"}, titledTurn(0, 1, 100, "first")))
	require.Equal(t, []string{"x"}, pageAll(t, indexer(t, b), session.ListQuery{Limit: 10}))
	require.NoError(t, a.Append(ctx, session.Header{ID: "y", CreatedAt: 2, Cwd: "/w"}, titledTurn(0, 1, 200, "second")))
	require.Equal(t, []string{"y", "x"}, pageAll(t, indexer(t, b), session.ListQuery{Limit: 10}))
	require.NoError(t, a.Append(ctx, session.Header{ID: "x", CreatedAt: 1, Cwd: "/w"}, titledTurn(3, 2, 300, "again")))
	require.Equal(t, []string{"x", "y"}, pageAll(t, indexer(t, b), session.ListQuery{Limit: 1}))
	sm, err := indexer(t, b).Lookup(ctx, "x")
	require.NoError(t, err)
	require.Equal(t, "first", sm.Title)
}

// BenchPage pages through 1,000 stored sessions, 50 a page, and fails when
// a full pass takes more than 50 ms.
func BenchPage(b *testing.B, open func(b *testing.B) session.Store) {
	ctx := context.Background()
	st := open(b)
	x, ok := st.(session.Indexer)
	if !ok {
		b.Fatal("the store must implement session.Indexer")
	}
	for i := range 1000 {
		h := session.Header{ID: fmt.Sprintf("s%04d", i), CreatedAt: int64(i), Cwd: fmt.Sprintf("/w/%d", i%10)}
		if err := st.Append(ctx, h, titledTurn(0, 1, int64(i*10), fmt.Sprintf("task %d", i))); err != nil {
			b.Fatal(err)
		}
	}
	var worst time.Duration
	for b.Loop() {
		t0 := time.Now()
		q := session.ListQuery{Limit: 50, Keep: func(s session.Summary) bool { return s.Header.ParentSession == "" }}
		n := 0
		for {
			p, err := x.Page(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			n += len(p.Sessions)
			if p.Next == "" {
				break
			}
			q.Cursor = p.Next
		}
		if n != 1000 {
			b.Fatalf("paged %d sessions, want 1000", n)
		}
		worst = max(worst, time.Since(t0))
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "ms-worst-pass")
	if worst > 50*time.Millisecond {
		b.Errorf("paging through 1,000 sessions took %v; the target is 50 ms", worst)
	}
}
