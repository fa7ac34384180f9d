package jsonl_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
	"github.com/dsh-acp/dsh-acp/session/storetest"
)

// files lists every file below root (relative paths), directories left out.
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "sessions.index" { // the list index, no session's
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return err
	}))
	return out
}

// Prepare takes the session's lock ahead of its first write: another
// store cannot take the id in between, the first write lands where an
// unprepared one would, and the log loads back whole.
func TestPrepareHoldsTheSessionBeforeItsFirstWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := jsonl.Open(dir)
	require.NoError(t, err)
	defer a.Close()
	b, err := jsonl.Open(dir)
	require.NoError(t, err)
	defer b.Close()
	h := session.Header{ID: "prepared-1", CreatedAt: storetest.BaseTime, Cwd: "/work/p"}
	require.NoError(t, a.Prepare(ctx, h))
	require.NoError(t, a.Prepare(ctx, h), "a second Prepare is a no-op")

	g := storetest.NewGen(0)
	g.Turn(1, 3)
	events := g.Take()
	err = b.Append(ctx, h, events)
	require.ErrorIs(t, err, session.ErrHeld, "the lock is taken at Prepare, before any file exists")

	require.NoError(t, a.Write(ctx, h, events))
	path, err := a.Path(h)
	require.NoError(t, err)
	assert.FileExists(t, path)
	require.NoError(t, a.Release(h.ID))
	got, evs, err := b.Load(ctx, h.ID)
	require.NoError(t, err)
	assert.Equal(t, h.ID, got.ID)
	assert.Equal(t, storetest.Lines(t, events), storetest.Lines(t, evs))
}

// A prepared session that is never written leaves no file behind once
// released (Zed opens many threads that never get a prompt).
func TestPreparedButUnwrittenLeavesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := jsonl.Open(dir)
	require.NoError(t, err)
	h := session.Header{ID: "never-written", CreatedAt: storetest.BaseTime, Cwd: "/work/q"}
	require.NoError(t, st.Prepare(ctx, h))
	require.NotEmpty(t, files(t, dir), "the lock file exists while held")
	require.NoError(t, st.Release(h.ID))
	assert.Empty(t, files(t, dir))

	// The same through Close.
	h.ID = "never-written-2"
	require.NoError(t, st.Prepare(ctx, h))
	require.NoError(t, st.Close())
	assert.Empty(t, files(t, dir))
	hs, err := func() ([]session.Header, error) {
		again, err := jsonl.Open(dir)
		if err != nil {
			return nil, err
		}
		defer again.Close()
		return again.List(ctx)
	}()
	require.NoError(t, err)
	assert.Empty(t, hs)
}

// Preparing a session another process stored (and released) changes
// nothing: the first append continues its log as without Prepare.
func TestPrepareOfAStoredSessionIsANoOp(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	h := session.Header{ID: "stored-1", CreatedAt: storetest.BaseTime, Cwd: "/work/r"}
	g := storetest.NewGen(0)
	g.Turn(1, 2)
	first := g.Take()
	w, err := jsonl.Open(dir)
	require.NoError(t, err)
	require.NoError(t, w.Append(ctx, h, first))
	require.NoError(t, w.Close())

	st, err := jsonl.Open(dir)
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.Prepare(ctx, h))
	g.Turn(2, 2)
	second := g.Take()
	require.NoError(t, st.Append(ctx, h, second))
	_, evs, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	assert.Equal(t, storetest.Lines(t, append(first, second...)), storetest.Lines(t, evs))
}

// Prepare racing the first writes (the prompt came before the background
// Prepare ran): whichever comes first, the log is whole and in order.
func TestPrepareRacesTheFirstWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := jsonl.Open(dir)
	require.NoError(t, err)
	defer st.Close()
	for i := range 50 {
		h := session.Header{ID: fmt.Sprintf("race-%d", i), CreatedAt: storetest.BaseTime, Cwd: "/work/race"}
		g := storetest.NewGen(0)
		g.Turn(1, 2)
		events := g.Take()
		var wg sync.WaitGroup
		var perr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			perr = st.Prepare(ctx, h)
		}()
		werr := st.Append(ctx, h, events)
		wg.Wait()
		require.NoError(t, errors.Join(perr, werr))
		_, evs, err := st.Load(ctx, h.ID)
		require.NoError(t, err)
		require.Equal(t, storetest.Lines(t, events), storetest.Lines(t, evs))
	}
}

// BenchmarkFirstWrite measures a new session's first (lazy) write, the one
// between the user's first prompt and the first model request, with and
// without Prepare having run at session/new.
func BenchmarkFirstWrite(b *testing.B) {
	for _, prepared := range []bool{false, true} {
		b.Run(fmt.Sprintf("prepared=%v", prepared), func(b *testing.B) {
			ctx := context.Background()
			st, err := jsonl.Open(b.TempDir())
			require.NoError(b, err)
			defer st.Close()
			g := storetest.NewGen(0)
			g.TurnStart(1, "hello")
			events := g.Take()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				h := session.Header{ID: fmt.Sprintf("first-%d", i), CreatedAt: storetest.BaseTime, Cwd: "/work/bench"}
				if prepared {
					b.StopTimer()
					require.NoError(b, st.Prepare(ctx, h))
					b.StartTimer()
				}
				if err := st.Write(ctx, h, events); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
