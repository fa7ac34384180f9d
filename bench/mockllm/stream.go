package mockllm

import (
	"bufio"
	"context"
	"net/http"
	"time"
)

// streamBuffer is the write buffer of a reply.
const streamBuffer = 64 << 10

// stream writes one reply: frames go through a buffer that is flushed per
// chunk (Reply.FlushEach), when full, and at the end; content chunks are
// paced by Reply.Delay. It stops writing once the client is gone.
type stream struct {
	ctx       context.Context
	w         http.ResponseWriter
	bw        *bufio.Writer
	rec       *Record
	delay     time.Duration
	flushEach bool
	chunks    int
	timer     *time.Timer
	dead      bool
	buf       []byte // scratch for frame data
}

// countingWriter counts bytes into the record and notes the first write.
type countingWriter struct {
	w   http.ResponseWriter
	rec *Record
	s   *Server
}

func (c countingWriter) Write(p []byte) (int, error) {
	if c.rec.FirstByte.IsZero() {
		c.rec.FirstByte = time.Now()
		c.s.noteFirstByte(c.rec.Seq, c.rec.FirstByte)
	}
	n, err := c.w.Write(p)
	c.rec.Bytes += int64(n)
	return n, err
}

func newStream(s *Server, ctx context.Context, w http.ResponseWriter, rec *Record, r *Reply) *stream {
	return &stream{ctx: ctx, w: w, rec: rec, delay: r.Delay, flushEach: r.FlushEach,
		bw: bufio.NewWriterSize(countingWriter{w, rec, s}, streamBuffer)}
}

// alive reports whether the client is still reading.
func (s *stream) alive() bool {
	if !s.dead && s.ctx.Err() != nil {
		s.dead = true
		s.rec.Aborted = true
	}
	return !s.dead
}

// chunk paces a content chunk: it returns false when the stream must stop.
// Call it before writing the chunk's frame, then call sent after.
func (s *stream) chunk() bool {
	if !s.alive() {
		return false
	}
	if s.chunks > 0 && s.delay > 0 {
		s.flush()
		if s.timer == nil {
			s.timer = time.NewTimer(s.delay)
		} else {
			s.timer.Reset(s.delay)
		}
		select {
		case <-s.timer.C:
		case <-s.ctx.Done():
			return s.alive()
		}
	}
	return true
}

// sent finishes a content chunk.
func (s *stream) sent() {
	s.chunks++
	s.rec.Chunks++
	if s.flushEach {
		s.flush()
	}
}

// event writes one SSE frame: "event: NAME\n" unless name is empty, then
// "data: DATA\n\n".
func (s *stream) event(name string, data []byte) {
	if s.dead {
		return
	}
	if name != "" {
		_, _ = s.bw.WriteString("event: ")
		_, _ = s.bw.WriteString(name)
		_ = s.bw.WriteByte('\n')
	}
	_, _ = s.bw.WriteString("data: ")
	_, _ = s.bw.Write(data)
	if _, err := s.bw.WriteString("\n\n"); err != nil {
		s.dead, s.rec.Aborted = true, true
	}
}

// raw writes b as is (Gemini's \r\n framing, non-streaming bodies).
func (s *stream) raw(b []byte) {
	if s.dead {
		return
	}
	if _, err := s.bw.Write(b); err != nil {
		s.dead, s.rec.Aborted = true, true
	}
}

// flush pushes buffered bytes to the client.
func (s *stream) flush() {
	if s.dead {
		return
	}
	s.rec.LastFlush = time.Now()
	if err := s.bw.Flush(); err != nil {
		s.dead, s.rec.Aborted = true, true
		return
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// close flushes the rest and stops the timer.
func (s *stream) close() {
	s.flush()
	if s.timer != nil {
		s.timer.Stop()
	}
}
