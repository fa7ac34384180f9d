package bash

import (
	"fmt"
	"github.com/dsh-acp/dsh-acp/internal/textenc"
	"os"
	"strings"
	"sync"
)

// TailBytes is the most output one stream keeps in memory.
const TailBytes = 64000

// readChunk is the pipe read size (one "chunk" of the contract's chunk-aligned
// trimming; Node reads pipes in 64 KiB chunks too).
const readChunk = 64 * 1024

// stream captures one output stream of a command: an in-memory tail of at
// most max bytes, trimmed by whole read chunks from the head, and, once the
// stream's total exceeds max, a private spill file holding all of it.
// It is safe for concurrent use (a background task is read while it runs).
type stream struct {
	max      int
	spillDir string
	name     string // "stdout" or "stderr", for the spill file name

	mu        sync.Mutex
	chunks    [][]byte
	kept      int   // bytes in chunks
	total     int64 // bytes ever written
	truncated bool  // something was dropped from memory
	spilling  bool
	spill     *os.File
	spillPath string // "" when the spill file is unavailable
}

func newStream(name, spillDir string) *stream {
	return &stream{max: TailBytes, spillDir: spillDir, name: name}
}

// write records one read chunk. p is copied.
func (s *stream) write(p []byte) {
	if len(p) == 0 {
		return
	}
	chunk := append([]byte(nil), p...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunks = append(s.chunks, chunk)
	s.kept += len(chunk)
	s.total += int64(len(chunk))
	switch {
	case s.spilling:
		s.spillWrite(chunk)
	case s.total > int64(s.max):
		s.startSpill()
	}
	for s.kept > s.max && len(s.chunks) > 1 {
		s.kept -= len(s.chunks[0])
		s.chunks[0] = nil
		s.chunks = s.chunks[1:]
		s.truncated = true
	}
	if s.kept > s.max {
		c := s.chunks[0]
		s.chunks[0] = append([]byte(nil), c[len(c)-s.max:]...)
		s.kept = s.max
		s.truncated = true
	}
}

// startSpill creates the spill file and writes everything captured so far
// (nothing has been dropped yet when the total first exceeds the cap).
func (s *stream) startSpill() {
	s.spilling = true
	f, err := os.CreateTemp(s.spillDir, "dsh-bash-"+s.name+"-*.log")
	if err != nil {
		return
	}
	s.spill, s.spillPath = f, f.Name()
	for _, c := range s.chunks {
		s.spillWrite(c)
	}
}

func (s *stream) spillWrite(p []byte) {
	if s.spill == nil {
		return
	}
	if _, err := s.spill.Write(p); err != nil {
		_ = s.spill.Close()
		s.spill, s.spillPath = nil, ""
	}
}

// close closes the spill file; the file itself stays for the model to read.
func (s *stream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spill != nil {
		if err := s.spill.Close(); err != nil {
			s.spillPath = ""
		}
		s.spill = nil
	}
}

// capture is a stream's final state.
type capture struct {
	text      string
	truncated bool
	spillPath string
}

// snapshot returns the kept tail as text.
func (s *stream) snapshot() capture {
	s.mu.Lock()
	defer s.mu.Unlock()
	return capture{text: textenc.DecodeUTF8(s.keptBytes(0)), truncated: s.truncated, spillPath: s.spillPath}
}

// keptBytes returns the kept bytes at or after absolute offset from.
func (s *stream) keptBytes(from int64) []byte {
	start := s.total - int64(s.kept)
	skip := int64(0)
	if from > start {
		skip = from - start
	}
	out := make([]byte, 0, int64(s.kept)-skip)
	for _, c := range s.chunks {
		if skip >= int64(len(c)) {
			skip -= int64(len(c))
			continue
		}
		out = append(out, c[skip:]...)
		skip = 0
	}
	return out
}

// delta is the output written since absolute offset from.
type delta struct {
	text      string
	dropped   bool   // bytes after from are no longer in memory
	spillPath string // where the whole stream is, "" if unavailable
	next      int64  // offset to read from next time
}

// since returns what was written after offset from.
func (s *stream) since(from int64) delta {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := s.total - int64(s.kept)
	return delta{
		text:      textenc.DecodeUTF8(s.keptBytes(from)),
		dropped:   from < start,
		spillPath: s.spillPath,
		next:      s.total,
	}
}

// streamText is a stream's text with its truncation notice (result step 1).
func streamText(c capture) string {
	if !c.truncated {
		return c.text
	}
	path := c.spillPath
	if path == "" {
		path = "(unavailable)"
	}
	return c.text + fmt.Sprintf("\n[output truncated; full output: %s]", path)
}

// joinStreams puts stderr after stdout under a [stderr] header (result step
// 2); it is also how task output deltas are joined.
func joinStreams(out, errText string) string {
	body := out
	if errText != "" {
		if body != "" && !strings.HasSuffix(body, "\n") {
			body += "\n"
		}
		body += "[stderr]\n" + errText
	}
	return body
}

// resultText assembles the bash result text (tools contract § 3).
func resultText(stdout, stderr capture, markers []string) string {
	body := joinStreams(streamText(stdout), streamText(stderr))
	if body == "" {
		body = "(no output)"
	}
	if len(markers) == 0 {
		return body
	}
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return body + strings.Join(markers, "\n")
}
