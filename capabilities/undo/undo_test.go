package undo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
)

func newLog() *session.Log {
	return session.NewLog(session.Header{ID: "s"}, func() int64 { return 0 }, nil)
}

func turn(l *session.Log, n int) {
	l.Append(session.TypeTurnStart, session.TurnStart{Turn: n, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
}

// write changes a file the way the fs tools do and journals it.
func write(t *testing.T, l *session.Log, path, content string) {
	t.Helper()
	before, err := os.ReadFile(path)
	existed := err == nil
	require.NoError(t, os.WriteFile(path, []byte(content), 0o640))
	Record(l, "call", path, existed, before, []byte(content))
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestRevertRestoresLastTurnInReverseOrder(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "new.txt")
	require.NoError(t, os.WriteFile(a, []byte("v0"), 0o600))
	l := newLog()
	turn(l, 1)
	write(t, l, a, "v1")
	turn(l, 2)
	write(t, l, a, "v2")
	write(t, l, a, "v3")
	write(t, l, b, "created")

	r, ok := Revert(context.Background(), l)
	require.True(t, ok)
	require.Equal(t, Result{Turn: 2, Restored: []string{b, a}, Refused: []Refusal{}}, r)
	require.Equal(t, "v1", read(t, a))
	_, err := os.Stat(b)
	require.ErrorIs(t, err, os.ErrNotExist, "a file the turn created is removed")
	info, err := os.Stat(a)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the file keeps its mode")

	// A second undo reverts the turn before.
	r, ok = Revert(context.Background(), l)
	require.True(t, ok)
	require.Equal(t, 1, r.Turn)
	require.Equal(t, "v0", read(t, a))
	_, ok = Revert(context.Background(), l)
	require.False(t, ok, "nothing left to undo")
}

func TestRevertRefusesHumanEdits(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	require.NoError(t, os.WriteFile(a, []byte("a0"), 0o600))
	require.NoError(t, os.WriteFile(b, []byte("b0"), 0o600))
	l := newLog()
	turn(l, 1)
	write(t, l, a, "a1")
	write(t, l, b, "b1")
	write(t, l, a, "a2")
	require.NoError(t, os.WriteFile(a, []byte("human"), 0o600))

	r, ok := Revert(context.Background(), l)
	require.True(t, ok)
	require.Equal(t, []string{b}, r.Restored)
	require.Equal(t, []Refusal{{Path: a, Reason: "it changed since the agent wrote it"}}, r.Refused)
	require.Equal(t, "human", read(t, a), "a human edit is never clobbered")
	require.Equal(t, "b0", read(t, b))
	require.Contains(t, Report(r, dir), "Restored:\n- b.txt\nNot restored:\n- a.txt: it changed since the agent wrote it")

	// The outcome is in the log, so the turn is not offered again.
	var res Result
	ev := l.Events()
	require.NoError(t, ev[len(ev)-1].Decode(&res))
	require.Equal(t, r, res)
	_, ok = Revert(context.Background(), l)
	require.False(t, ok)
}

func TestRevertRefusesDeletedFileAndRestoresBinary(t *testing.T) {
	dir := t.TempDir()
	bin, gone := filepath.Join(dir, "blob"), filepath.Join(dir, "gone.txt")
	require.NoError(t, os.WriteFile(bin, []byte{0xff, 0x00, 0xfe}, 0o600))
	l := newLog()
	turn(l, 1)
	write(t, l, bin, "text now")
	write(t, l, gone, "x")
	require.NoError(t, os.Remove(gone))
	r, _ := Revert(context.Background(), l)
	require.Equal(t, []string{bin}, r.Restored)
	require.Equal(t, "the file no longer exists", r.Refused[0].Reason)
	require.Equal(t, string([]byte{0xff, 0x00, 0xfe}), read(t, bin))
}
