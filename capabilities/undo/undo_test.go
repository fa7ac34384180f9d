package undo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/localfs"
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

// TestRevertFilesStaysConfined: a journal path whose directory was swapped
// for a link to the outside since the agent wrote it is refused by a
// confined Files, even when the outside file holds exactly the content the
// agent wrote.
func TestRevertFilesStaysConfined(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	root, away := filepath.Join(base, "root"), filepath.Join(base, "away")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "d"), 0o755))
	require.NoError(t, os.MkdirAll(away, 0o755))
	inside, created := filepath.Join(root, "d", "f.txt"), filepath.Join(root, "d", "new.txt")
	require.NoError(t, os.WriteFile(inside, []byte("before"), 0o644))
	l := newLog()
	turn(l, 1)
	write(t, l, inside, "after")
	write(t, l, created, "created")
	// The attack: d becomes a link to away, where the same names hold the
	// same content.
	require.NoError(t, os.Rename(filepath.Join(root, "d"), filepath.Join(base, "moved")))
	require.NoError(t, os.Symlink(away, filepath.Join(root, "d")))
	require.NoError(t, os.WriteFile(filepath.Join(away, "f.txt"), []byte("after"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(away, "new.txt"), []byte("created"), 0o644))

	files, err := localfs.New(root)
	require.NoError(t, err)
	r, ok := RevertFiles(context.Background(), l, files)
	require.True(t, ok)
	require.Empty(t, r.Restored)
	require.Equal(t, []Refusal{
		{Path: created, Reason: "cannot read it: " + capabilities.ErrOutsideRoot.Error()},
		{Path: inside, Reason: "cannot read it: " + capabilities.ErrOutsideRoot.Error()},
	}, r.Refused)
	require.Equal(t, "after", read(t, filepath.Join(away, "f.txt")), "nothing outside is restored")
	require.Equal(t, "created", read(t, filepath.Join(away, "new.txt")), "nothing outside is removed")
}

// TestRevertFilesWritesThroughTheSeam restores through a confined Files
// inside the root: content, mode, and the link the agent wrote through.
func TestRevertFilesWritesThroughTheSeam(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	real, link := filepath.Join(root, "real.txt"), filepath.Join(root, "link.txt")
	require.NoError(t, os.WriteFile(real, []byte("v0"), 0o751))
	require.NoError(t, os.Symlink("real.txt", link))
	l := newLog()
	turn(l, 1)
	Record(l, "call", link, true, []byte("v0"), []byte("v1"))
	require.NoError(t, os.WriteFile(real, []byte("v1"), 0o751))

	files, err := localfs.New(root)
	require.NoError(t, err)
	r, ok := RevertFiles(context.Background(), l, files)
	require.True(t, ok)
	require.Equal(t, []string{link}, r.Restored)
	require.Equal(t, "v0", read(t, real))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	require.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link is still a link")
	fi, err = os.Stat(real)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o751), fi.Mode().Perm())
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, entries, 2, "no staging residue")
}
