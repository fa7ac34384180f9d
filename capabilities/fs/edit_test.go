package fs

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEditBasics(t *testing.T) {
	h := newHarness(t, true)
	p := h.writeFile("config.txt", "mode=DEBUG\nlevel=info\n")

	h.fails("edit", map[string]any{"file_path": "config.txt", "old_string": "DEBUG", "new_string": "RELEASE"},
		`edit requires reading "`+p+`" first`, CodeNotObserved)
	h.ok("read", map[string]any{"file_path": "config.txt"})
	out := h.call("edit", map[string]any{"file_path": "config.txt", "old_string": "DEBUG", "new_string": "RELEASE"})
	require.False(t, out.IsError)
	require.Equal(t, "The file "+p+" has been updated successfully.", text(out))
	require.Equal(t, `{"diffs":[{"path":"config.txt","oldText":"mode=DEBUG\nlevel=info","newText":"mode=RELEASE\nlevel=info"}]}`, string(out.Meta))
	require.Equal(t, "mode=RELEASE\nlevel=info\n", h.readFile("config.txt"))
	require.Equal(t, []Change{{CallID: "call_3", Path: p, Existed: true, Before: []byte("mode=DEBUG\nlevel=info\n"), After: []byte("mode=RELEASE\nlevel=info\n")}}, h.changes)

	// The edit recorded the new version: a second edit needs no re-read.
	h.ok("edit", map[string]any{"file_path": "config.txt", "old_string": "info", "new_string": "warn"})
	require.Equal(t, "mode=RELEASE\nlevel=warn\n", h.readFile("config.txt"))
}

func TestEditErrors(t *testing.T) {
	h := newHarness(t, true)
	p := h.writeFile("f.txt", "foo bar foo\n")
	h.ok("read", map[string]any{"file_path": "f.txt"})

	h.fails("edit", map[string]any{"file_path": " ", "old_string": "a", "new_string": "b"}, "file_path must be a non-empty string", "")
	h.fails("edit", map[string]any{"file_path": "f.txt", "old_string": "", "new_string": "b"}, "old_string must be a non-empty string", "")
	h.fails("edit", map[string]any{"file_path": "f.txt", "old_string": "x", "new_string": "x"}, "old_string and new_string must differ", "")
	h.fails("edit", map[string]any{"file_path": "f.txt", "old_string": "baz", "new_string": "qux"}, `old_string was not found in "`+p+`"`, CodeEditNotFound)
	h.fails("edit", map[string]any{"file_path": "f.txt", "old_string": "foo", "new_string": "qux"},
		`old_string matched 2 times in "`+p+`"; provide a more specific old_string or set replace_all to true`, CodeAmbiguousEdit)
	h.fails("edit", map[string]any{"file_path": "missing.txt", "old_string": "a", "new_string": "b"},
		`edit requires reading "`+h.path("missing.txt")+`" first`, CodeNotObserved)
	out := h.call("edit", map[string]any{"file_path": "f.txt", "old_string": "a", "new_string": "b", "replace_all": "yes"})
	require.Equal(t, `Error: invalid arguments: "replace_all" must be a boolean`, text(out))
	require.Equal(t, "foo bar foo\n", h.readFile("f.txt"))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out = h.callCtx(ctx, "edit", map[string]any{"file_path": "f.txt", "old_string": "bar", "new_string": "baz"})
	require.Equal(t, "Error: edit aborted", text(out))
	require.Equal(t, CodeAborted, out.Error.Code)

	// Stale: changed behind the session's back, then deleted.
	touch(t, p, "foo bar foo, changed\n")
	h.fails("edit", map[string]any{"file_path": "f.txt", "old_string": "bar", "new_string": "baz"},
		`cannot edit "`+p+`": file changed since it was read`, CodeStaleVersion)
	h.ok("read", map[string]any{"file_path": "f.txt"})
	require.NoError(t, os.Remove(p))
	h.fails("edit", map[string]any{"file_path": "f.txt", "old_string": "bar", "new_string": "baz"},
		`cannot edit "`+p+`": file changed since it was read`, CodeStaleVersion)
	require.NoError(t, os.Mkdir(p, 0o755))
	h.fails("edit", map[string]any{"file_path": "f.txt", "old_string": "bar", "new_string": "baz"},
		`cannot edit "`+p+`": not a regular file`, CodeNotRegular)

	// Content the read tool would refuse, observed through write or by hand.
	h.ok("write", map[string]any{"file_path": "bin.txt", "content": "a\x00b"})
	h.fails("edit", map[string]any{"file_path": "bin.txt", "old_string": "a", "new_string": "c"},
		`cannot edit "`+h.path("bin.txt")+`": binary file`, CodeNotText)
	bad := h.writeFile("bad.txt", "a\xffb")
	h.observe("bad.txt")
	h.fails("edit", map[string]any{"file_path": "bad.txt", "old_string": "a", "new_string": "c"},
		`cannot edit "`+bad+`": invalid UTF-8 text`, CodeNotText)
	require.Empty(t, h.changes[1:])
}

func TestEditReplaceAll(t *testing.T) {
	h := newHarness(t, true)
	p := h.writeFile("f.txt", "a1\nb\na1\nc\na1\n")
	h.ok("read", map[string]any{"file_path": "f.txt"})
	out := h.call("edit", map[string]any{"file_path": "f.txt", "old_string": "a1", "new_string": "A", "replace_all": true})
	require.Equal(t, "The file "+p+" has been updated. All occurrences were successfully replaced.", text(out))
	require.Equal(t, "A\nb\nA\nc\nA\n", h.readFile("f.txt"))
	require.JSONEq(t, `{"diffs":[{"path":"f.txt","oldText":"a1\nb\na1\nc\na1","newText":"A\nb\nA\nc\nA"}]}`, string(out.Meta))

	// replace_all with a single match still reports all occurrences.
	out = h.call("edit", map[string]any{"file_path": "f.txt", "old_string": "c", "new_string": "C", "replace_all": true})
	require.Equal(t, "The file "+p+" has been updated. All occurrences were successfully replaced.", text(out))
	// replace_all false behaves like absent.
	out = h.call("edit", map[string]any{"file_path": "f.txt", "old_string": "b", "new_string": "B", "replace_all": false})
	require.Equal(t, "The file "+p+" has been updated successfully.", text(out))
	// Occurrences do not overlap.
	h.writeFile("o.txt", "aaa\n")
	h.ok("read", map[string]any{"file_path": "o.txt"})
	h.ok("edit", map[string]any{"file_path": "o.txt", "old_string": "aa", "new_string": "b"})
	require.Equal(t, "ba\n", h.readFile("o.txt"))
}

func TestEditLineEndings(t *testing.T) {
	h := newHarness(t, true)

	// A CRLF file stays CRLF; old_string may use either ending.
	h.writeFile("crlf.txt", "one\r\ntwo\r\nthree\r\n")
	h.ok("read", map[string]any{"file_path": "crlf.txt"})
	out := h.call("edit", map[string]any{"file_path": "crlf.txt", "old_string": "one\r\ntwo", "new_string": "1\n2\n2b"})
	require.False(t, out.IsError, text(out))
	require.Equal(t, "1\r\n2\r\n2b\r\nthree\r\n", h.readFile("crlf.txt"))
	require.JSONEq(t, `{"diffs":[{"path":"crlf.txt","oldText":"one\ntwo\nthree","newText":"1\n2\n2b\nthree"}]}`, string(out.Meta))
	require.Equal(t, []byte("one\r\ntwo\r\nthree\r\n"), h.changes[0].Before)
	require.Equal(t, []byte("1\r\n2\r\n2b\r\nthree\r\n"), h.changes[0].After)

	// Mostly LF: the file is written back LF-normalized.
	h.writeFile("mixed.txt", "a\nb\nc\r\n")
	h.ok("read", map[string]any{"file_path": "mixed.txt"})
	h.ok("edit", map[string]any{"file_path": "mixed.txt", "old_string": "b", "new_string": "B"})
	require.Equal(t, "a\nB\nc\n", h.readFile("mixed.txt"))

	// Mostly CRLF: bare LFs become CRLF too.
	h.writeFile("mixed2.txt", "a\r\nb\r\nc\n")
	h.ok("read", map[string]any{"file_path": "mixed2.txt"})
	h.ok("edit", map[string]any{"file_path": "mixed2.txt", "old_string": "b", "new_string": "B"})
	require.Equal(t, "a\r\nB\r\nc\r\n", h.readFile("mixed2.txt"))

	// An edit that only changes line endings leaves the text equal: empty diffs.
	h.writeFile("eol.txt", "x\r\ny\r\n")
	h.ok("read", map[string]any{"file_path": "eol.txt"})
	out = h.call("edit", map[string]any{"file_path": "eol.txt", "old_string": "x\r\n", "new_string": "x\n"})
	require.False(t, out.IsError, text(out))
	require.Equal(t, `{"diffs":[]}`, string(out.Meta))
	require.Equal(t, "x\r\ny\r\n", h.readFile("eol.txt"))

	// Only the first 4096 UTF-16 units decide: line breaks beyond them do
	// not count.
	h.writeFile("sample.txt", strings.Repeat("crlf line\r\n", 10)+strings.Repeat("x", 5000)+"\n"+strings.Repeat("lf\n", 100))
	h.ok("read", map[string]any{"file_path": "sample.txt", "limit": 1})
	h.ok("edit", map[string]any{"file_path": "sample.txt", "old_string": strings.Repeat("lf\n", 100), "new_string": "end\n"})
	require.Equal(t, strings.Repeat("crlf line\r\n", 10)+strings.Repeat("x", 5000)+"\r\nend\r\n", h.readFile("sample.txt"))

}

func TestPrefersCRLF(t *testing.T) {
	require.False(t, prefersCRLF(""))
	require.False(t, prefersCRLF("a\r\nb\n"), "a tie keeps LF")
	require.True(t, prefersCRLF("a\r\nb\r\nc\n"))
	require.False(t, prefersCRLF("a\r\r\n\n"), "CRLF 1, LF 1")
	// Astral characters count two units: 1 + 4092 + 2 + 1 units leave one CRLF in.
	require.False(t, prefersCRLF("\n"+strings.Repeat("😀", 2046)+"\r\n\r\n"))
	require.True(t, prefersCRLF("\n"+strings.Repeat("😀", 2045)+"\r\n\r\n"))
	// Two-byte characters count one unit.
	require.True(t, prefersCRLF("\n"+strings.Repeat("é", 4000)+"\r\n\r\n"))
	// A CRLF split by the sample end counts as neither.
	require.False(t, prefersCRLF("\r\n\n"+strings.Repeat("a", 4092)+"\r\n\r\n"))
	require.True(t, prefersCRLF("\r\n\n"+strings.Repeat("a", 4090)+"\r\n\r\n"))
}

func TestEditPreservesModeAndBOM(t *testing.T) {
	h := newHarness(t, true)
	p := h.writeFile("f.txt", "\uFEFFkey=1\n")
	require.NoError(t, os.Chmod(p, 0o600))
	require.Equal(t, readText(p, "1: key=1", "(End of file - total 1 lines)"), h.ok("read", map[string]any{"file_path": "f.txt"}))
	out := h.call("edit", map[string]any{"file_path": "f.txt", "old_string": "key=1", "new_string": "key=2"})
	require.JSONEq(t, `{"diffs":[{"path":"f.txt","oldText":"key=1","newText":"key=2"}]}`, string(out.Meta))
	require.Equal(t, "\uFEFFkey=2\n", h.readFile("f.txt"))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestPolicyIsPerToolSet(t *testing.T) {
	dir := t.TempDir()
	a := newHarnessIn(t, dir, true)
	b := newHarnessIn(t, dir, true)
	a.writeFile("f.txt", "x\n")
	a.ok("read", map[string]any{"file_path": "f.txt"})
	b.fails("edit", map[string]any{"file_path": "f.txt", "old_string": "x", "new_string": "y"},
		`edit requires reading "`+b.path("f.txt")+`" first`, CodeNotObserved)
	a.ok("edit", map[string]any{"file_path": "f.txt", "old_string": "x", "new_string": "y"})
}

func TestConcurrentCallsOfOneSession(t *testing.T) {
	h := newHarness(t, true)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		name := fmt.Sprintf("f%d.txt", i)
		wg.Go(func() {
			out := h.reg.Execute(t.Context(), h.env, "c"+name, "write", `{"file_path":"`+name+`","content":"a\n"}`)
			require.False(t, out.IsError, text(out))
			out = h.reg.Execute(t.Context(), h.env, "r"+name, "read", `{"file_path":"`+name+`"}`)
			require.False(t, out.IsError, text(out))
			out = h.reg.Execute(t.Context(), h.env, "e"+name, "edit", `{"file_path":"`+name+`","old_string":"a","new_string":"b"}`)
			require.False(t, out.IsError, text(out))
		})
	}
	wg.Wait()
	for i := 0; i < 8; i++ {
		require.Equal(t, "b\n", h.readFile(fmt.Sprintf("f%d.txt", i)))
	}
	require.Len(t, h.changes, 16)
}
