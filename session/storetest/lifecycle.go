package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
)

// runLifecycle is the part of the suite for session/list, session/delete:
// summaries with the last event's time, pagination with a cwd filter, and
// deletion under the session's lock.
func runLifecycle(t *testing.T, open Opener, mk func(t *testing.T) session.Store) {
	t.Run("SummariesUpdatedAt", func(t *testing.T) { testSummaries(t, mk(t)) })
	t.Run("ListPages", func(t *testing.T) { testListPages(t, mk(t)) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, mk(t)) })
	t.Run("DeleteHeldRefused", func(t *testing.T) { testDeleteHeld(t, open) })
}

// events returns n complete events of one turn whose times start at t0.
func timed(t0 int64, first, turn int) []session.Event {
	evs := completeTurnAt(first, turn)
	for i := range evs {
		evs[i].Time = t0 + int64(i)
	}
	return evs
}

func summarizer(t *testing.T, st session.Store) session.Summarizer {
	t.Helper()
	s, ok := st.(session.Summarizer)
	require.True(t, ok, "the store must implement session.Summarizer")
	return s
}

func byID(sums []session.Summary) map[string]int64 {
	out := map[string]int64{}
	for _, s := range sums {
		out[s.Header.ID] = s.UpdatedAt
	}
	return out
}

func testSummaries(t *testing.T, st session.Store) {
	ctx := context.Background()
	a := session.Header{ID: "a", CreatedAt: 100, Cwd: "/w"}
	b := session.Header{ID: "b", CreatedAt: 200, Cwd: "/w"}
	require.NoError(t, st.Append(ctx, a, timed(1000, 0, 1)))
	require.NoError(t, st.Append(ctx, b, timed(2000, 0, 1)))
	sums, err := summarizer(t, st).Summaries(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"a": 1002, "b": 2002}, byID(sums), "the last event's time")
	require.NoError(t, st.Append(ctx, a, timed(3000, 3, 2)))
	sums, err = summarizer(t, st).Summaries(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"a": 3002, "b": 2002}, byID(sums), "a later append moves updatedAt")
	for _, s := range sums {
		if s.Header.ID == "a" {
			require.Equal(t, a, s.Header)
		}
	}
}

func testListPages(t *testing.T, st session.Store) {
	ctx := context.Background()
	for i := range 7 {
		cwd := "/w/one"
		if i%2 == 1 {
			cwd = "/w/two"
		}
		h := session.Header{ID: fmt.Sprintf("s%d", i), CreatedAt: int64(i), Cwd: cwd}
		require.NoError(t, st.Append(ctx, h, timed(int64(100*i), 0, 1)))
	}
	sums, err := summarizer(t, st).Summaries(ctx)
	require.NoError(t, err)

	var got []string
	cursor := ""
	pages := 0
	for {
		p, err := session.Paginate(sums, session.ListQuery{Cursor: cursor, Limit: 3})
		require.NoError(t, err)
		pages++
		for _, s := range p.Sessions {
			got = append(got, s.Header.ID)
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	require.Equal(t, []string{"s6", "s5", "s4", "s3", "s2", "s1", "s0"}, got, "newest first, each once")
	require.Equal(t, 3, pages)

	p, err := session.Paginate(sums, session.ListQuery{Cwd: "/w/two/", Limit: 2})
	require.NoError(t, err)
	require.Len(t, p.Sessions, 2)
	require.Equal(t, "s5", p.Sessions[0].Header.ID)
	p, err = session.Paginate(sums, session.ListQuery{Cwd: "/w/two", Cursor: p.Next, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, "s1", p.Sessions[0].Header.ID)
	require.Empty(t, p.Next, "the cwd filter's last page")

	_, err = session.Paginate(sums, session.ListQuery{Cursor: "not a cursor!"})
	require.ErrorIs(t, err, session.ErrBadCursor)
}

func deleter(t *testing.T, st session.Store) session.Deleter {
	t.Helper()
	d, ok := st.(session.Deleter)
	require.True(t, ok, "the store must implement session.Deleter")
	return d
}

func testDelete(t *testing.T, st session.Store) {
	ctx := context.Background()
	keep := session.Header{ID: "keep", CreatedAt: 1, Cwd: "/w"}
	gone := session.Header{ID: "gone/ü", CreatedAt: 2, Cwd: "/w"}
	require.NoError(t, st.Append(ctx, keep, completeTurnAt(0, 1)))
	require.NoError(t, st.Append(ctx, gone, completeTurnAt(0, 1)))
	// The creating store holds both; deleting needs them released.
	requireHeld(t, deleter(t, st).Delete(ctx, gone.ID), gone.ID)
	release(t, st, gone.ID)
	require.NoError(t, deleter(t, st).Delete(ctx, gone.ID))
	_, _, err := st.Load(ctx, gone.ID)
	require.ErrorIs(t, err, session.ErrNotFound)
	hs, err := st.List(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	require.Equal(t, "keep", hs[0].ID)
	err = deleter(t, st).Delete(ctx, gone.ID)
	require.ErrorIs(t, err, session.ErrNotFound)
	require.Equal(t, fmt.Sprintf("session %q not found", gone.ID), err.Error())
	// A deleted id can be created again from scratch.
	require.NoError(t, st.Append(ctx, gone, completeTurnAt(0, 1)))
	_, got, err := st.Load(ctx, gone.ID)
	require.NoError(t, err)
	require.Len(t, got, 3)
}

func testDeleteHeld(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := owners(t, open)
	h := session.Header{ID: "held", CreatedAt: 1, Cwd: "/w"}
	require.NoError(t, a.Append(ctx, h, completeTurnAt(0, 1)))
	requireHeld(t, deleter(t, b).Delete(ctx, h.ID), h.ID)
	_, got, err := a.Load(ctx, h.ID)
	require.NoError(t, err, "a refused delete changes nothing")
	require.Len(t, got, 3)
	release(t, a, h.ID)
	require.NoError(t, deleter(t, b).Delete(ctx, h.ID), "once released another owner may delete it")
	_, _, err = a.Load(ctx, h.ID)
	require.ErrorIs(t, err, session.ErrNotFound)
}

// RunDeleteProcess is the two-process delete: a session a child process
// holds cannot be deleted here (the error names the child), and can once
// the child is gone.
func RunDeleteProcess(t *testing.T, open DirOpener) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := open(dir)
	require.NoError(t, err)
	h := session.Header{ID: "delete-two-processes", CreatedAt: 1, Cwd: "/w"}
	require.NoError(t, st.Append(ctx, h, completeTurnAt(0, 1)))
	require.NoError(t, st.Close())

	child, stop := holdInChild(t, dir, h.ID)
	st2, err := open(dir)
	require.NoError(t, err)
	defer st2.Close()
	err = deleter(t, st2).Delete(ctx, h.ID)
	var he *session.HeldError
	require.True(t, errors.As(err, &he), "delete of a session another process holds: %v", err)
	require.Equal(t, child.Process.Pid, he.Holder.PID)
	stop()
	require.NoError(t, deleter(t, st2).Delete(ctx, h.ID))
	hs, err := st2.List(ctx)
	require.NoError(t, err)
	require.Empty(t, hs)
}

// holdInChild starts a child that holds session id of the store in dir;
// stop kills it (a crash) and waits.
func holdInChild(t *testing.T, dir, id string) (*exec.Cmd, func()) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), holdEnv+"="+dir+"\n"+id)
	_, err := child.StdinPipe()
	require.NoError(t, err)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	stop := func() { _ = child.Process.Kill(); _ = child.Wait() }
	t.Cleanup(stop)
	line := make([]byte, 5)
	_, err = out.Read(line)
	require.NoError(t, err)
	require.Equal(t, "held\n", string(line))
	return child, stop
}
