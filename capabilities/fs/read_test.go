package fs

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadWindowing(t *testing.T) {
	long := strings.Repeat("x", 2500)
	cases := []struct {
		name    string
		content string
		args    map[string]any
		body    string
		footer  string
	}{
		{"one line", "hello\n", nil, "1: hello", "(End of file - total 1 lines)"},
		{"empty file", "", nil, "", "(End of file - total 0 lines)"},
		{"offset 1 on empty file", "", map[string]any{"offset": 1}, "", "(End of file - total 0 lines)"},
		{"no trailing newline", "a\nb", nil, "1: a\n2: b", "(End of file - total 2 lines)"},
		{"trailing newline starts no line", "a\nb\n", nil, "1: a\n2: b", "(End of file - total 2 lines)"},
		{"blank last line", "a\n\n", nil, "1: a\n2: ", "(End of file - total 2 lines)"},
		{"only a newline", "\n", nil, "1: ", "(End of file - total 1 lines)"},
		{"crlf", "a\r\nb\r\n", nil, "1: a\n2: b", "(End of file - total 2 lines)"},
		{"one cr stripped per line", "a\r\r\nb\r", nil, "1: a\r\n2: b", "(End of file - total 2 lines)"},
		{"lone cr last line counts", "a\n\r", nil, "1: a\n2: ", "(End of file - total 2 lines)"},
		{"bare cr is not a break", "a\rb\n", nil, "1: a\rb", "(End of file - total 1 lines)"},
		{"byte order mark dropped", "\uFEFFhi\n", nil, "1: hi", "(End of file - total 1 lines)"},
		{"offset and limit", "1\n2\n3\n4\n5\n", map[string]any{"offset": 2, "limit": 2}, "2: 2\n3: 3", "(Showing lines 2-3 of 5. Use offset=4 to continue.)"},
		{"offset to the end", "1\n2\n3\n", map[string]any{"offset": 3}, "3: 3", "(End of file - total 3 lines)"},
		{"limit exactly the rest", "1\n2\n3\n", map[string]any{"offset": 2, "limit": 2}, "2: 2\n3: 3", "(End of file - total 3 lines)"},
		{"integral float offset", "1\n2\n", map[string]any{"offset": 2.0}, "2: 2", "(End of file - total 2 lines)"},
		{"long line truncated", long + "\n", nil, "1: " + long[:2000] + "... (line truncated to 2000 chars)", "(End of file - total 1 lines)"},
		{"2000 chars kept", long[:2000] + "\n", nil, "1: " + long[:2000], "(End of file - total 1 lines)"},
		{"2000 chars plus cr kept", long[:2000] + "\r\n", nil, "1: " + long[:2000], "(End of file - total 1 lines)"},
		{"2001 chars truncated", long[:2001] + "\r\n", nil, "1: " + long[:2000] + "... (line truncated to 2000 chars)", "(End of file - total 1 lines)"},
		{"2000 two-byte chars kept", strings.Repeat("é", 2000), nil, "1: " + strings.Repeat("é", 2000), "(End of file - total 1 lines)"},
		{"2001 two-byte chars truncated", strings.Repeat("é", 2001), nil, "1: " + strings.Repeat("é", 2000) + "... (line truncated to 2000 chars)", "(End of file - total 1 lines)"},
		{"1000 astral chars are 2000 units", strings.Repeat("😀", 1000), nil, "1: " + strings.Repeat("😀", 1000), "(End of file - total 1 lines)"},
		{"1001 astral chars truncated", strings.Repeat("😀", 1001), nil, "1: " + strings.Repeat("😀", 1000) + "... (line truncated to 2000 chars)", "(End of file - total 1 lines)"},
		{"surrogate pair cut in half", strings.Repeat("a", 1999) + "😀b", nil, "1: " + strings.Repeat("a", 1999) + "\uFFFD... (line truncated to 2000 chars)", "(End of file - total 1 lines)"},
		{"cjk truncated by units", strings.Repeat("漢", 2100) + "\nz", map[string]any{"limit": 1}, "1: " + strings.Repeat("漢", 2000) + "... (line truncated to 2000 chars)", "(Showing lines 1-1 of 2. Use offset=2 to continue.)"},
		{"long line across chunks", strings.Repeat("a", 70000) + "\nz\n", nil, "1: " + strings.Repeat("a", 2000) + "... (line truncated to 2000 chars)\n2: z", "(End of file - total 2 lines)"},
		// Upstream keeps 2001 units of a line and then strips one trailing CR:
		// a CR right at unit 2001 hides the rest of the line without a marker.
		{"cr at unit 2001 quirk", long[:2000] + "\rbbb\n", nil, "1: " + long[:2000], "(End of file - total 1 lines)"},
		{"nul after the sample is text", strings.Repeat("a", 9000) + "\x00\n", map[string]any{"limit": 1}, "1: " + strings.Repeat("a", 2000) + "... (line truncated to 2000 chars)", "(End of file - total 1 lines)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			p := h.writeFile("f.txt", tc.content)
			args := map[string]any{"file_path": "f.txt"}
			for k, v := range tc.args {
				args[k] = v
			}
			require.Equal(t, readText(p, tc.body, tc.footer), h.ok("read", args))
		})
	}
}

func TestReadDefaultLimit(t *testing.T) {
	h := newHarness(t, true)
	var b strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	p := h.writeFile("f.txt", b.String())
	out := h.ok("read", map[string]any{"file_path": "f.txt"})
	require.True(t, strings.HasPrefix(out, "<path>"+p+"</path>\n<type>file</type>\n<content>\n1: 1\n2: 2\n"))
	require.True(t, strings.HasSuffix(out, "\n2000: 2000\n\n(Showing lines 1-2000 of 2500. Use offset=2001 to continue.)\n</content>"))
	out = h.ok("read", map[string]any{"file_path": "f.txt", "offset": 2001})
	require.True(t, strings.HasSuffix(out, "\n2500: 2500\n\n(End of file - total 2500 lines)\n</content>"))
}

func TestReadByteCap(t *testing.T) {
	h := newHarness(t, true)
	line := strings.Repeat("x", 1000)
	p := h.writeFile("f.txt", strings.Repeat(line+"\n", 100))
	out := h.ok("read", map[string]any{"file_path": "f.txt"})
	// 1000 + 50 × 1001 = 51050 bytes fit; a 52nd line would make 52051.
	var body []string
	for i := 1; i <= 51; i++ {
		body = append(body, fmt.Sprintf("%d: %s", i, line))
	}
	require.Equal(t, readText(p, strings.Join(body, "\n"), "(Output capped. Showing lines 1-51. Use offset=52 to continue.)"), out)

	// The cap counts the truncated text, suffix included, from the offset.
	long := strings.Repeat("y", 5000)
	p2 := h.writeFile("g.txt", "skip\n"+strings.Repeat(long+"\n", 40))
	out = h.ok("read", map[string]any{"file_path": "g.txt", "offset": 2})
	shown := strings.Repeat("y", 2000) + truncationSuffix // 2034 bytes
	n := 1 + (MaxOutputBytes-len(shown))/(len(shown)+1)   // lines that fit
	body = body[:0]
	for i := 2; i < 2+n; i++ {
		body = append(body, fmt.Sprintf("%d: %s", i, shown))
	}
	require.Equal(t, readText(p2, strings.Join(body, "\n"), fmt.Sprintf("(Output capped. Showing lines 2-%d. Use offset=%d to continue.)", n+1, n+2)), out)
}

func TestReadByteCapBoundary(t *testing.T) {
	// 25 truncated lines of 2034 bytes plus separators make 50874 bytes; a
	// 26th line of 325 bytes (+1 separator) reaches exactly 51200 and fits,
	// one of 326 does not.
	long := strings.Repeat("z", 3000)
	shown := strings.Repeat("z", 2000) + truncationSuffix
	rest := MaxOutputBytes - (25*len(shown) + 24) - 1
	require.Equal(t, 325, rest)
	for _, tc := range []struct {
		size   int
		footer string
	}{
		{rest, "\n26: %s\n\n(Output capped. Showing lines 1-26. Use offset=27 to continue.)"},
		{rest + 1, "\n25: " + shown + "\n\n(Output capped. Showing lines 1-25. Use offset=26 to continue.)%.0s"},
	} {
		h := newHarness(t, true)
		w := strings.Repeat("w", tc.size)
		h.writeFile("f.txt", strings.Repeat(long+"\n", 25)+w+"\nlast\n")
		out := h.ok("read", map[string]any{"file_path": "f.txt"})
		require.True(t, strings.HasSuffix(out, fmt.Sprintf(tc.footer, w)+"\n</content>"), out[len(out)-200:])
	}
}

func TestReadLargeFileAcrossChunks(t *testing.T) {
	h := newHarness(t, true)
	var b strings.Builder
	for i := 1; i <= 200000; i++ {
		fmt.Fprintf(&b, "line %d ✓\n", i)
	}
	b.WriteString("tail without newline")
	p := h.writeFile("big.txt", b.String())
	out := h.ok("read", map[string]any{"file_path": "big.txt", "offset": 150000, "limit": 3})
	require.Equal(t, readText(p, "150000: line 150000 ✓\n150001: line 150001 ✓\n150002: line 150002 ✓",
		"(Showing lines 150000-150002 of 200001. Use offset=150003 to continue.)"), out)
	out = h.ok("read", map[string]any{"file_path": "big.txt", "offset": 200001})
	require.Equal(t, readText(p, "200001: tail without newline", "(End of file - total 200001 lines)"), out)
}

func TestReadMultibyteAcrossChunkBoundary(t *testing.T) {
	h := newHarness(t, true)
	// "€" (3 bytes) starts 2 bytes before the first 64 KiB boundary.
	prefix := strings.Repeat("a", readChunk-2)
	p := h.writeFile("f.txt", prefix+"€\nnext\n")
	out := h.ok("read", map[string]any{"file_path": "f.txt", "offset": 2})
	require.Equal(t, readText(p, "2: next", "(End of file - total 2 lines)"), out)
}

// TestReadAFileLongerThanItsSize: the buffer is sized by the length the
// file had when opened; one that grew since is still read whole, with a
// character across the smaller buffer's boundary.
func TestReadAFileLongerThanItsSize(t *testing.T) {
	content := strings.Repeat("a", binarySample-1) + "€\nnext\n"
	w := &window{offset: 2, limit: 10}
	require.NoError(t, w.scan(context.Background(), strings.NewReader(content), "f.txt", 10))
	require.Equal(t, int64(2), w.total)
	require.Equal(t, "2: next", string(w.body))
}

func TestReadErrors(t *testing.T) {
	h := newHarness(t, true)
	h.writeFile("f.txt", "a\nb\n")
	h.writeFile("empty.txt", "")
	h.writeFile("bin.dat", "abc\x00def")
	h.writeFile("bad.txt", "ok\n\xff\n")
	h.writeFile("latebad.txt", strings.Repeat("a\n", 50000)+"\xc3")
	h.writeFile("bom-only-bad.txt", "\xEF\xBB")
	require.NoError(t, os.Mkdir(h.path("dir"), 0o755))
	f := h.path("f.txt")

	h.fails("read", map[string]any{"file_path": ""}, "file_path must be a non-empty string", "")
	h.fails("read", map[string]any{"file_path": "  "}, "file_path must be a non-empty string", "")
	for _, bad := range []string{"0", "-1", "1.5", "-0", "1e400"} {
		h.fails("read", fmt.Sprintf(`{"file_path":"f.txt","offset":%s}`, bad), "offset must be a positive integer", "")
	}
	h.fails("read", `{"file_path":"f.txt","offset":1e400}`, "offset must be a positive integer", "")
	h.fails("read", map[string]any{"file_path": "f.txt", "limit": 0}, "limit must be a positive integer", "")
	h.fails("read", map[string]any{"file_path": "f.txt", "limit": 2.5}, "limit must be a positive integer", "")
	h.fails("read", map[string]any{"file_path": "f.txt", "limit": 2001}, "limit must be less than or equal to 2000", "")
	h.fails("read", map[string]any{"file_path": "f.txt", "offset": 0, "limit": 0}, "offset must be a positive integer", "")
	h.ok("read", map[string]any{"file_path": "empty.txt", "limit": 2000})

	out := h.call("read", map[string]any{"file_path": "f.txt", "offset": "2"})
	require.Equal(t, `Error: invalid arguments: "offset" must be a number`, text(out))
	require.Equal(t, "INVALID_ARGS", out.Error.Code)

	h.fails("read", map[string]any{"file_path": "missing.txt"}, `cannot read "`+h.path("missing.txt")+`": not found`, CodeNotFound)
	h.fails("read", map[string]any{"file_path": "dir"}, `cannot read "`+h.path("dir")+`": not a regular file`, CodeNotRegular)
	h.fails("read", map[string]any{"file_path": "f.txt/x"}, `cannot resolve "`+f+`/x": a parent path segment is not a directory`, CodeNotFound)
	h.fails("read", map[string]any{"file_path": "f.txt/x/y"}, `cannot resolve "`+f+`/x/y": a parent path segment is not a directory`, CodeNotFound)
	h.fails("read", map[string]any{"file_path": "bin.dat"}, `cannot read "`+h.path("bin.dat")+`": binary file`, CodeNotText)
	h.fails("read", map[string]any{"file_path": "bad.txt"}, `cannot read "`+h.path("bad.txt")+`": invalid UTF-8 text`, CodeNotText)
	h.fails("read", map[string]any{"file_path": "latebad.txt"}, `cannot read "`+h.path("latebad.txt")+`": invalid UTF-8 text`, CodeNotText)
	h.fails("read", map[string]any{"file_path": "bom-only-bad.txt"}, `cannot read "`+h.path("bom-only-bad.txt")+`": invalid UTF-8 text`, CodeNotText)
	h.fails("read", map[string]any{"file_path": "f.txt", "offset": 3}, `offset 3 is out of range for "`+f+`" (2 lines)`, CodeNotFound)
	h.fails("read", map[string]any{"file_path": "empty.txt", "offset": 2}, `offset 2 is out of range for "`+h.path("empty.txt")+`" (0 lines)`, CodeNotFound)
	h.fails("read", map[string]any{"file_path": "f.txt", "offset": 1e300}, `offset 1e+300 is out of range for "`+f+`" (2 lines)`, CodeNotFound)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out = h.callCtx(ctx, "read", map[string]any{"file_path": "f.txt"})
	require.Equal(t, "Error: read aborted", text(out))
	require.Equal(t, CodeAborted, out.Error.Code)

	// None of the failures observed anything.
	_, seen := h.files.policy.observed(f)
	require.False(t, seen)
}

func TestReadAbsoluteAndDotPaths(t *testing.T) {
	h := newHarness(t, false)
	p := h.writeFile("sub/f.txt", "x\n")
	require.Equal(t, readText(p, "1: x", "(End of file - total 1 lines)"), h.ok("read", map[string]any{"file_path": p}))
	require.Equal(t, readText(p, "1: x", "(End of file - total 1 lines)"), h.ok("read", map[string]any{"file_path": "./sub/../sub/f.txt"}))
	require.Equal(t, readText(p, "1: x", "(End of file - total 1 lines)"), h.ok("read", map[string]any{"file_path": "sub//f.txt"}))
}
