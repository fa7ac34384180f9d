package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
)

// The ownership cases (session.Owner, docs/reliability.md "One owner per
// session"): two stores opened on the same dir stand for two processes
// (flock locks conflict between open files, in one process as in two).

// owners opens two stores on one fresh dir; both are closed at cleanup.
func owners(t *testing.T, open Opener) (a, b session.Store) {
	dir := t.TempDir()
	a, b = open(t, dir), open(t, dir)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	_, okA := a.(session.Owner)
	_, okB := b.(session.Owner)
	require.True(t, okA && okB, "the store must implement session.Owner")
	return a, b
}

func release(t *testing.T, st session.Store, id string) {
	t.Helper()
	require.NoError(t, st.(session.Owner).Release(id))
}

// requireHeld checks a refusal: a *session.HeldError for id that names
// this process (the other "process" is this one).
func requireHeld(t *testing.T, err error, id string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, session.ErrHeld)
	var he *session.HeldError
	require.True(t, errors.As(err, &he), "%v must be a *session.HeldError", err)
	require.Equal(t, id, he.ID)
	require.Equal(t, os.Getpid(), he.Holder.PID, "the holder records its pid")
	require.Contains(t, err.Error(), fmt.Sprintf("pid %d", os.Getpid()), "the error names the holder")
}

func testOwnerLoadRefused(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := owners(t, open)
	h := session.Header{ID: "owned", CreatedAt: 1, Cwd: "/w"}
	first := completeTurnAt(0, 1)
	require.NoError(t, a.Append(ctx, h, first)) // a created it: a owns it

	_, _, err := b.Load(ctx, h.ID)
	requireHeld(t, err, h.ID)
	requireHeld(t, b.Append(ctx, h, completeTurnAt(3, 2)), h.ID)

	// The refused store wrote nothing: the owner continues at its own seq.
	require.NoError(t, a.Append(ctx, h, completeTurnAt(3, 2)))
	_, got, err := a.Load(ctx, h.ID)
	require.NoError(t, err, "the owner loads its own session again")
	require.Len(t, got, 6)

	// Listing needs no ownership.
	hs, err := b.List(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 1)
}

func testOwnerRelease(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := owners(t, open)
	h := session.Header{ID: "handed-over", CreatedAt: 1}
	require.NoError(t, a.Append(ctx, h, completeTurnAt(0, 1)))
	release(t, a, h.ID)
	release(t, a, h.ID) // idempotent
	release(t, a, "never-held")

	_, got, err := b.Load(ctx, h.ID)
	require.NoError(t, err, "a released session can be loaded elsewhere")
	require.Len(t, got, 3)
	require.NoError(t, b.Append(ctx, h, completeTurnAt(3, 2)))

	// The first owner lost it: it can neither load nor append now.
	_, _, err = a.Load(ctx, h.ID)
	requireHeld(t, err, h.ID)
	requireHeld(t, a.Append(ctx, h, completeTurnAt(3, 2)), h.ID)

	// Handed back, the first owner re-reads the stored state: its stale
	// batch (seqs it thought were next) fails loudly instead of forking
	// the log.
	release(t, b, h.ID)
	require.EqualError(t, a.Append(ctx, h, completeTurnAt(3, 2)), `append seq mismatch for "handed-over": expected 6 at index 0, got 3`)
	require.NoError(t, a.Append(ctx, h, completeTurnAt(6, 3)))
	_, got, err = a.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Len(t, got, 9)
}

func testOwnerCloseReleases(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := owners(t, open)
	for i := range 3 {
		require.NoError(t, a.Append(ctx, session.Header{ID: fmt.Sprint("c-", i), CreatedAt: 1}, completeTurnAt(0, 1)))
	}
	_, _, err := b.Load(ctx, "c-1")
	requireHeld(t, err, "c-1")
	require.NoError(t, a.Close())
	for i := range 3 {
		_, got, err := b.Load(ctx, fmt.Sprint("c-", i))
		require.NoError(t, err, "closing a store releases every session it held")
		require.Len(t, got, 3)
	}
}

// A held session with an open turn is not repaired by the refused store:
// the owner's turn goes on and ends, and the log holds no crash closer.
func testOwnerHeldNotRepaired(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := owners(t, open)
	h := session.Header{ID: "busy", CreatedAt: 1, Cwd: "/p"}
	g := NewGen(0)
	g.TurnStart(1, "long task")
	g.StepWithTool(1, 1, 2, []string{"c1"}, 1, 0, false) // mid-tool, turn open
	require.NoError(t, a.Append(ctx, h, g.Take()))

	for range 2 {
		_, _, err := b.Load(ctx, h.ID)
		requireHeld(t, err, h.ID)
	}
	// The owner finishes its turn after the refusals.
	g.Add(session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, CallID: "c1", Content: []session.Block{session.TextBlock("done")}}, nil)
	g.Add(session.TypeStepEnd, session.StepRef{Turn: 1, Step: 1}, nil)
	g.TurnEnd(1)
	require.NoError(t, a.Append(ctx, h, g.Take()))
	release(t, a, h.ID)

	_, got, err := b.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, Lines(t, g.Events), Lines(t, got), "no interrupted closers: nobody crashed")
}

// A store that owns a session may load it again (session/load after the
// editor reopened it in the same process).
func testOwnerReentrant(t *testing.T, open Opener) {
	ctx := context.Background()
	a, _ := owners(t, open)
	h := session.Header{ID: "again", CreatedAt: 1}
	require.NoError(t, a.Append(ctx, h, completeTurnAt(0, 1)))
	for range 3 {
		_, got, err := a.Load(ctx, h.ID)
		require.NoError(t, err)
		require.Len(t, got, 3)
	}
}

// A Log's Close flushes and releases: another store then owns the session.
func testOwnerLogClose(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := owners(t, open)
	var now int64
	clock := func() int64 { now++; return now }
	l := session.NewLog(session.Header{ID: "log-close", CreatedAt: 1}, clock, a)
	l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}})
	require.NoError(t, l.Flush(ctx))
	_, _, err := b.Load(ctx, "log-close")
	requireHeld(t, err, "log-close")
	l.Append(session.TypeTodoWrite, session.TodoWrite{Todos: []session.Todo{{Content: "x", Status: "pending"}}})
	require.NoError(t, l.Close(ctx))
	_, got, err := b.Load(ctx, "log-close")
	require.NoError(t, err)
	require.Equal(t, Lines(t, l.Events()), Lines(t, got), "Close flushed before it released")
}
