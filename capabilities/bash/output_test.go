package bash

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStreamChunkAlignedTail(t *testing.T) {
	dir := t.TempDir()
	s := newStream("stdout", dir)
	s.write(bytes.Repeat([]byte("a"), 30000))
	s.write(bytes.Repeat([]byte("b"), 30000))
	c := s.snapshot()
	require.False(t, c.truncated)
	require.Empty(t, c.spillPath, "no spill at or under the cap")

	s.write(bytes.Repeat([]byte("c"), 10000)) // total 70000: spill, drop the whole "a" chunk
	c = s.snapshot()
	require.True(t, c.truncated)
	require.Equal(t, strings.Repeat("b", 30000)+strings.Repeat("c", 10000), c.text)
	require.NotEmpty(t, c.spillPath)

	s.write(bytes.Repeat([]byte("d"), 70000)) // one over-cap chunk keeps its last 64000 bytes
	c = s.snapshot()
	require.Equal(t, strings.Repeat("d", TailBytes), c.text)
	s.close()

	b, err := os.ReadFile(c.spillPath)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("a", 30000)+strings.Repeat("b", 30000)+strings.Repeat("c", 10000)+strings.Repeat("d", 70000), string(b))
}

func TestStreamSince(t *testing.T) {
	s := newStream("stdout", t.TempDir())
	s.write([]byte("hello "))
	d := s.since(0)
	require.Equal(t, delta{text: "hello ", next: 6}, d)
	s.write([]byte("world"))
	require.Equal(t, "world", s.since(d.next).text)
	require.False(t, s.since(d.next).dropped)
	s.write(bytes.Repeat([]byte("x"), TailBytes)) // drops "hello " and the unread "world"
	d2 := s.since(d.next)
	require.True(t, d2.dropped)
	require.Equal(t, strings.Repeat("x", TailBytes), d2.text)
	require.NotEmpty(t, d2.spillPath)
	s.close()
}

func TestSpillUnavailable(t *testing.T) {
	s := newStream("stdout", "/nonexistent/dir")
	s.write(bytes.Repeat([]byte("x"), TailBytes+1))
	c := s.snapshot()
	require.True(t, c.truncated)
	require.Equal(t, strings.Repeat("x", TailBytes)+"\n[output truncated; full output: (unavailable)]", streamText(c))
}

func TestResultText(t *testing.T) {
	c := func(s string) capture { return capture{text: s} }
	require.Equal(t, "(no output)", resultText(c(""), c(""), nil))
	require.Equal(t, "(no output)\n[exit code: 2]", resultText(c(""), c(""), []string{"[exit code: 2]"}))
	require.Equal(t, "[stderr]\nboom\n[exit code: 1]", resultText(c(""), c("boom\n"), []string{"[exit code: 1]"}))
	require.Equal(t, "a\n[output truncated; full output: /tmp/x]\n[stderr]\ne", resultText(capture{text: "a", truncated: true, spillPath: "/tmp/x"}, c("e"), nil))
}
