package deepseek

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// sseBufferSize is the read buffer of the SSE reader; longer lines are
// assembled across reads.
const sseBufferSize = 64 << 10

// sseReader splits a server-sent-events byte stream into event data
// (replay contract § 8): events end at a blank line (`\n` or `\r\n` line
// endings); an event's data is its `data:` lines, one leading space
// stripped, joined with "\n"; other fields and comments are ignored, as are
// events without data. It never limits how many comments or blank lines
// (keep-alives) arrive between events.
type sseReader struct {
	r    *bufio.Reader
	long []byte // assembles a line longer than the buffer
	data []byte // data of the event being read; reused
}

func newSSEReader(r io.Reader) *sseReader { return newSSEReaderSize(r, sseBufferSize) }

// newSSEReaderSize returns a reader with a size-byte buffer (bufio's
// minimum is 16), so tests can exercise lines longer than the buffer.
func newSSEReaderSize(r io.Reader, size int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, size)}
}

// next returns the data of the next event. The slice is valid until the
// following call. At the end of the stream it returns io.EOF; an event the
// stream ends in the middle of (no terminating blank line) is discarded.
func (s *sseReader) next() ([]byte, error) {
	s.data = s.data[:0]
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if len(s.data) > 0 {
				return s.data, nil
			}
			hasData = false
			continue
		}
		if line[0] == ':' {
			continue // comment, e.g. ": keep-alive"
		}
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(name) != "data" {
			continue
		}
		if hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		hasData = true
	}
}

// readLine returns the next complete line without its line ending. The
// slice is valid until the following call. A final line without a line
// ending is dropped and io.EOF returned.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = s.r.ReadSlice('\n')
			s.long = append(s.long, line...)
		}
		line = s.long
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
