package fs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func writeResult(display, verb string) string {
	return "<path>" + display + "</path>\n<type>file</type>\n<content>\n" + verb + " file\n</content>"
}

// touch changes a file behind the session's back and moves its mtime, so
// the change is visible whatever the filesystem's timestamp granularity.
func touch(t *testing.T, p, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(p, later, later))
}

func TestWriteCreates(t *testing.T) {
	h := newHarness(t, true)
	out := h.call("write", map[string]any{"file_path": "a/b/new.txt", "content": "hello\r\nworld"})
	require.False(t, out.IsError)
	p := h.path("a/b/new.txt")
	require.Equal(t, writeResult(p, "Created"), text(out))
	require.Nil(t, out.Meta)
	require.Equal(t, "hello\r\nworld", h.readFile("a/b/new.txt"), "content is written verbatim")
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	require.Equal(t, []Change{{CallID: "call_1", Path: p, Existed: false, After: []byte("hello\r\nworld")}}, h.changes)

	// No staging residue beside the file.
	entries, err := os.ReadDir(filepath.Dir(p))
	require.NoError(t, err)
	require.Len(t, entries, 1)

	// Written means observed: the session may overwrite and edit it.
	out = h.call("write", map[string]any{"file_path": "a/b/new.txt", "content": "hello\nthere\n"})
	require.Equal(t, writeResult(p, "Updated"), text(out))
	require.JSONEq(t, `{"diffs":[{"path":"a/b/new.txt","oldText":"hello\nworld","newText":"hello\nthere"}]}`, string(out.Meta))
	h.ok("edit", map[string]any{"file_path": "a/b/new.txt", "old_string": "there", "new_string": "you"})
	require.Equal(t, "hello\nyou\n", h.readFile("a/b/new.txt"))
}

func TestWritePolicy(t *testing.T) {
	h := newHarness(t, true)
	p := h.writeFile("f.txt", "one\n")

	h.fails("write", map[string]any{"file_path": "f.txt", "content": "x"}, `cannot overwrite existing "`+p+`" without reading it first`, CodeNotObserved)
	require.Equal(t, "one\n", h.readFile("f.txt"))

	h.ok("read", map[string]any{"file_path": "f.txt"})
	touch(t, p, "two, longer\n")
	h.fails("write", map[string]any{"file_path": "f.txt", "content": "x"}, `cannot write "`+p+`": file changed since it was read`, CodeStaleVersion)
	require.Equal(t, "two, longer\n", h.readFile("f.txt"))

	// Same size, only the mtime moved.
	h.ok("read", map[string]any{"file_path": "f.txt"})
	touch(t, p, "two, LONGER\n")
	h.fails("write", map[string]any{"file_path": "f.txt", "content": "x"}, `cannot write "`+p+`": file changed since it was read`, CodeStaleVersion)

	h.ok("read", map[string]any{"file_path": "f.txt"})
	require.NoError(t, os.Remove(p))
	h.fails("write", map[string]any{"file_path": "f.txt", "content": "x"}, `cannot write "`+p+`": file no longer exists`, CodeStaleVersion)

	require.NoError(t, os.Mkdir(h.path("dir"), 0o755))
	h.fails("write", map[string]any{"file_path": "dir", "content": "x"}, `cannot write "`+h.path("dir")+`": not a regular file`, CodeNotRegular)
	h.fails("write", map[string]any{"file_path": "", "content": "x"}, "file_path must be a non-empty string", "")
	h.writeFile("plain", "x")
	h.fails("write", map[string]any{"file_path": "plain/child.txt", "content": "x"}, `cannot resolve "`+h.path("plain/child.txt")+`": a parent path segment is not a directory`, CodeNotFound)
	out := h.call("write", map[string]any{"file_path": "f.txt"})
	require.Equal(t, `Error: invalid arguments: missing required property "content"`, text(out))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out = h.callCtx(ctx, "write", map[string]any{"file_path": "new.txt", "content": "x"})
	require.Equal(t, "Error: write aborted", text(out))
	require.Equal(t, CodeAborted, out.Error.Code)
	require.NoFileExists(t, h.path("new.txt"))
	require.Empty(t, h.changes)
}

func TestWriteUpdatePreservesModeAndReportsDiff(t *testing.T) {
	h := newHarness(t, true)
	p := h.writeFile("run.sh", "#!/bin/sh\necho old\n")
	require.NoError(t, os.Chmod(p, 0o751))
	before, err := os.Stat(p)
	require.NoError(t, err)
	h.ok("read", map[string]any{"file_path": "run.sh"})

	out := h.call("write", map[string]any{"file_path": "run.sh", "content": "#!/bin/sh\necho new\n"})
	require.False(t, out.IsError)
	require.Equal(t, writeResult(p, "Updated"), text(out))
	require.JSONEq(t, `{"diffs":[{"path":"run.sh","oldText":"#!/bin/sh\necho old","newText":"#!/bin/sh\necho new"}]}`, string(out.Meta))
	after, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o751), after.Mode().Perm())
	require.False(t, os.SameFile(before, after), "the content was renamed into place")
	require.Equal(t, []Change{{CallID: "call_2", Path: p, Existed: true, Before: []byte("#!/bin/sh\necho old\n"), After: []byte("#!/bin/sh\necho new\n")}}, h.changes)
	entries, err := os.ReadDir(h.dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no staging residue")
}

func TestWriteMetaOnlyForChangedText(t *testing.T) {
	h := newHarness(t, true)
	cases := []struct {
		name, before, after string
		meta                string
	}{
		{"identical", "same\n", "same\n", ""},
		{"only line endings", "a\r\nb\r\n", "a\nb\n", ""},
		{"crlf normalized before diffing", "a\r\nb\r\n", "a\r\nB\r\n", `{"diffs":[{"path":"%s","oldText":"a\nb","newText":"a\nB"}]}`},
		{"binary before", "a\x00b", "text\n", ""},
		{"invalid utf-8 before", "a\xffb", "text\n", ""},
		{"bom dropped from before", "\uFEFFx\n", "y\n", `{"diffs":[{"path":"%s","oldText":"x","newText":"y"}]}`},
		{"to empty", "x\n", "", `{"diffs":[{"path":"%s","oldText":"x","newText":""}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "_") + ".txt"
			h.writeFile(name, tc.before)
			h.observe(name)
			out := h.call("write", map[string]any{"file_path": name, "content": tc.after})
			require.False(t, out.IsError, text(out))
			require.Equal(t, writeResult(h.path(name), "Updated"), text(out))
			if tc.meta == "" {
				require.Nil(t, out.Meta)
			} else {
				require.JSONEq(t, strings.ReplaceAll(tc.meta, "%s", name), string(out.Meta))
			}
			require.Equal(t, tc.after, h.readFile(name))
		})
	}
}

// inode returns a file's inode number.

func TestWriteThroughSymlinkKeepsLink(t *testing.T) {
	h := newHarness(t, true)
	real := h.writeFile("real.txt", "old\n")
	require.NoError(t, os.Symlink("real.txt", h.path("link.txt")))
	h.ok("read", map[string]any{"file_path": "link.txt"})
	out := h.call("write", map[string]any{"file_path": "link.txt", "content": "new\n"})
	require.Equal(t, writeResult(h.path("link.txt"), "Updated"), text(out))
	require.Equal(t, "new\n", h.readFile("real.txt"))
	fi, err := os.Lstat(h.path("link.txt"))
	require.NoError(t, err)
	require.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link is still a link")
	// Aliases share one identity: reading the link observed the real file.
	h.ok("edit", map[string]any{"file_path": real, "old_string": "new", "new_string": "newer"})
	require.Equal(t, "newer\n", h.readFile("real.txt"))
}
