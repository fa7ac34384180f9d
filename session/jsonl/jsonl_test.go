package jsonl_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
	"github.com/dsh-acp/dsh-acp/session/storetest"
)

func TestEncodeID(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"0b5f2b8e-6d1e-4c5a-9a43-2f1c3d4e5f60", "0b5f2b8e-6d1e-4c5a-9a43-2f1c3d4e5f60"},
		{"Az09._-", "Az09._-"},
		{"~", "~007E"},
		{"~007E", "~007E007E"},
		{".", "~002E"},
		{"..", "~002E~002E"},
		{"...", "..."},
		{"./a", ".~002Fa"},
		{"a/b\\c", "a~002Fb~005Cc"},
		{"with space", "with~0020space"},
		{"é", "~00E9"},
		{"日本", "~65E5~672C"},
		{"😀", "~D83D~DE00"},
		{"%41", "~002541"},
		{"\x00", "~0000"},
	} {
		got, err := jsonl.EncodeID(tc.id)
		require.NoError(t, err, tc.id)
		require.Equal(t, tc.want, got, "id %q", tc.id)
	}
	_, err := jsonl.EncodeID("")
	require.Error(t, err)
}

func TestBucket(t *testing.T) {
	require.Equal(t, "_no-cwd", jsonl.Bucket(""))
	require.Equal(t, "cwd-9dad1e4e08b0", jsonl.Bucket("/home/user/project"))
	require.Equal(t, "cwd-ed2fd1a3eec8", jsonl.Bucket("/tmp/é"))
}

func open(t *testing.T) (*jsonl.Store, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "sessions")
	st, err := jsonl.Open(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st, root
}

func header(id, cwd string) session.Header {
	return session.Header{ID: id, CreatedAt: 1700000000000, Cwd: cwd}
}

// turns returns n complete turns and one open turn ending in an unanswered
// announced tool call when open is set.
func turns(n int, open bool) []session.Event {
	g := storetest.NewGen(0)
	for i := 1; i <= n; i++ {
		g.Turn(i, 1)
	}
	if open {
		g.TurnStart(n+1, "again")
		g.StepWithTool(n+1, 1, 1, []string{"c1"}, 1, 0, false)
	}
	return g.Events
}

func fileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(string(b), "\n"), "file must end with a newline")
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestLayoutModesAndNoTemp(t *testing.T) {
	ctx := context.Background()
	st, root := open(t)
	h := header("a/b ~.", "/home/user/project")
	evs := turns(1, false)
	require.NoError(t, st.Append(ctx, h, evs))
	require.NoError(t, st.Append(ctx, h, turns(2, false)[len(evs):]))

	bucket := filepath.Join(root, "cwd-9dad1e4e08b0")
	path := filepath.Join(bucket, "a~002Fb~0020~007E..jsonl")
	p, err := st.Path(h)
	require.NoError(t, err)
	require.Equal(t, path, p)
	for dir, mode := range map[string]os.FileMode{root: 0o700, bucket: 0o700, path: 0o600} {
		fi, err := os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, mode, fi.Mode().Perm(), dir)
	}
	entries, err := os.ReadDir(bucket)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"a~002Fb~0020~007E..jsonl", "a~002Fb~0020~007E..lock"}, names, "the log and its ownership lock; no temp file may remain")
	fi, err := os.Stat(filepath.Join(bucket, "a~002Fb~0020~007E..lock"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	lines := fileLines(t, path)
	require.Equal(t, `{"type":"session","version":0,"id":"a/b ~.","createdAt":1700000000000,"cwd":"/home/user/project"}`, lines[0])
	require.Equal(t, storetest.Lines(t, turns(2, false)), lines[1:])

	// Sessions without cwd and the special ids.
	for _, id := range []string{".", ".."} {
		require.NoError(t, st.Append(ctx, header(id, ""), turns(1, false)))
	}
	for _, name := range []string{"~002E.jsonl", "~002E~002E.jsonl"} {
		_, err := os.Stat(filepath.Join(root, "_no-cwd", name))
		require.NoError(t, err)
	}
	_, got, err := st.Load(ctx, "..")
	require.NoError(t, err)
	require.Len(t, got, len(evs))

	require.Error(t, st.Append(ctx, header("", ""), evs))
	_, _, err = st.Load(ctx, "")
	require.Error(t, err)
}

func TestReopenContinues(t *testing.T) {
	ctx := context.Background()
	st, root := open(t)
	h := header("s1", "/w")
	all := turns(3, false)
	require.NoError(t, st.Append(ctx, h, all[:14]))
	require.NoError(t, st.Close())
	require.ErrorIs(t, st.Append(ctx, h, all[14:28]), jsonl.ErrClosed)

	// A fresh store finds the file without a Load and continues its seqs.
	st2, err := jsonl.Open(root)
	require.NoError(t, err)
	require.EqualError(t, st2.Append(ctx, h, all[:14]), `append seq mismatch for "s1": expected 14 at index 0, got 0`)
	require.NoError(t, st2.Append(ctx, h, all[14:]))
	_, got, err := st2.Load(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, storetest.Lines(t, all), storetest.Lines(t, got))

	// A session appended under another cwd stays in its original file.
	h.Cwd = "/elsewhere"
	require.NoError(t, st2.Close())
	st3, err := jsonl.Open(root)
	require.NoError(t, err)
	more := turns(4, false)[len(all):]
	require.NoError(t, st3.Append(ctx, h, more))
	hs, err := st3.List(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	require.Equal(t, "/w", hs[0].Cwd)
}

func write(t *testing.T, st *jsonl.Store, h session.Header, evs []session.Event) string {
	t.Helper()
	require.NoError(t, st.Append(context.Background(), h, evs))
	p, err := st.Path(h)
	require.NoError(t, err)
	return p
}

func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestTornLastLineTruncated(t *testing.T) {
	ctx := context.Background()
	st, root := open(t)
	h := header("torn", "/w")
	evs := turns(1, false)
	path := write(t, st, h, evs)
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	appendRaw(t, path, `{"type":"turn/start","seq":14,"ti`)
	require.NoError(t, st.Close()) // the writer ended
	st2, err := jsonl.Open(root)   // a fresh process
	require.NoError(t, err)
	_, got, err := st2.Load(ctx, "torn")
	require.NoError(t, err)
	require.Equal(t, storetest.Lines(t, evs), storetest.Lines(t, got))
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "the torn line is truncated away")

	// The truncated log accepts the next batch at the right seq.
	next := turns(2, false)[len(evs):]
	require.NoError(t, st2.Append(ctx, h, next))
	_, got, err = st2.Load(ctx, "torn")
	require.NoError(t, err)
	require.Len(t, got, len(evs)+len(next))
}

func TestTornTailInOpenTurnRepaired(t *testing.T) {
	ctx := context.Background()
	st, root := open(t)
	h := header("torn-open", "")
	evs := turns(1, true) // complete turn then an open step with an unanswered call
	path := write(t, st, h, evs)
	n := len(evs)
	// A bad complete line, then a later line that would parse: both are
	// after the last turn/end, so they are a torn tail.
	appendRaw(t, path, "{not json}\n")
	appendRaw(t, path, `{"type":"step/end","seq":`+strconv.Itoa(n+1)+`,"time":1,"data":{"turn":2,"step":1}}`+"\n")

	require.NoError(t, st.Close())
	st2, err := jsonl.Open(root)
	require.NoError(t, err)
	_, got, err := st2.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Len(t, got, n+3) // + interrupted tool/result, step/end, turn/end
	require.Equal(t, storetest.Lines(t, evs), storetest.Lines(t, got[:n]))
	require.True(t, got[n].SurfaceOpFirst)
	require.Equal(t, session.TypeTurnEnd, got[n+2].Type)

	lines := fileLines(t, path)
	require.Equal(t, storetest.Lines(t, got), lines[1:], "torn tail dropped, closers persisted")

	// A gapped line after the last turn/end is a torn tail too.
	appendRaw(t, path, `{"type":"turn/start","seq":99,"time":1,"data":{"turn":3,"trigger":{"kind":"message","source":{"kind":"user"}}}}`+"\n")
	require.NoError(t, st2.Release(h.ID))
	st3, err := jsonl.Open(root)
	require.NoError(t, err)
	_, again, err := st3.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, storetest.Lines(t, got), storetest.Lines(t, again))
	require.Equal(t, storetest.Lines(t, got), fileLines(t, path)[1:])
}

func TestCorruptCommittedLineFatal(t *testing.T) {
	ctx := context.Background()
	evs := turns(2, false)
	for _, tc := range []struct {
		name    string
		line    int // file line (header = 0) to replace
		replace func(string) string
		want    string
	}{
		{"unparsable", 3, func(string) string { return `{"type":"step/start","seq":2,` }, "corrupt session log: unparsable committed event at line 3"},
		{"empty line", 5, func(string) string { return "" }, "corrupt session log: unparsable committed event at line 5"},
		{"seq gap", 4, func(l string) string { return strings.Replace(l, `"seq":3,`, `"seq":7,`, 1) }, "corrupt session log: seq gap in committed region at line 4 (expected 3, got 7)"},
		{"turn/end itself", len(evs), func(l string) string {
			return strings.Replace(l, `"seq":`+strconv.Itoa(len(evs)-1), `"seq":0`, 1)
		}, "corrupt session log: seq gap in committed region at line " + strconv.Itoa(len(evs)) + " (expected " + strconv.Itoa(len(evs)-1) + ", got 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, root := open(t)
			path := write(t, st, header("bad", "/w"), evs)
			lines := fileLines(t, path)
			lines[tc.line] = tc.replace(lines[tc.line])
			content := strings.Join(lines, "\n") + "\n"
			require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
			require.NoError(t, st.Close())
			st2, err := jsonl.Open(root)
			require.NoError(t, err)
			_, _, err = st2.Load(ctx, "bad")
			require.EqualError(t, err, tc.want)
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, content, string(after), "a fatal load must not modify the file")
		})
	}
}

func TestHeaderErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ first, want string }{
		{`{"type":"turn/start","seq":0}`, "corrupt session log: first line is not a session header"},
		{`["session"]`, "corrupt session log: first line is not a session header"},
		{`{"type":"session","version":0,`, "corrupt session log: header line is not valid JSON"},
		{``, "corrupt session log: header line is not valid JSON"},
		{`{"type":"session","version":1,"id":"h","createdAt":1}`, `unsupported session format version 1 for "h" (only v0 is supported)`},
		{`{"type":"session","id":"h","createdAt":1}`, `unsupported session format version -1 for "h" (only v0 is supported)`},
	} {
		st, root := open(t)
		dir := filepath.Join(root, jsonl.NoCwdBucket)
		require.NoError(t, os.MkdirAll(dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "h.jsonl"), []byte(tc.first+"\n"), 0o600))
		_, _, err := st.Load(ctx, "h")
		require.EqualError(t, err, tc.want, tc.first)
		hs, err := st.List(ctx)
		require.NoError(t, err)
		require.Empty(t, hs, "unreadable headers are not listed")
	}
}

func TestUnterminatedHeaderFixed(t *testing.T) {
	st, root := open(t)
	dir := filepath.Join(root, jsonl.NoCwdBucket)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	path := filepath.Join(dir, "h.jsonl")
	line := `{"type":"session","version":0,"id":"h","createdAt":1}`
	require.NoError(t, os.WriteFile(path, []byte(line), 0o600))
	h, evs, err := st.Load(context.Background(), "h")
	require.NoError(t, err)
	require.Equal(t, session.Header{ID: "h", CreatedAt: 1}, h)
	require.Empty(t, evs)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, line+"\n", string(b))
	require.NoError(t, st.Append(context.Background(), h, turns(1, false)))
	require.Len(t, fileLines(t, path), 1+len(turns(1, false)))
}

func TestListReadsFirstLinesOnly(t *testing.T) {
	ctx := context.Background()
	st, root := open(t)
	path := write(t, st, header("x", "/a"), turns(1, false))
	appendRaw(t, path, "garbage that Load would truncate\n")
	// Stray files are ignored: temp files, other extensions, directories.
	bucket := filepath.Dir(path)
	require.NoError(t, os.WriteFile(path+".0123456789ab.tmp", []byte("junk"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(bucket, "notes.txt"), []byte("junk"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(bucket, "dir.jsonl"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(root, "stray.jsonl"), []byte("junk"), 0o600))
	hs, err := st.List(ctx)
	require.NoError(t, err)
	require.Equal(t, []session.Header{header("x", "/a")}, hs)
}
