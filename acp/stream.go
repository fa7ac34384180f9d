package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/rs/zerolog"
)

// LineStream is the project-owned newline-delimited JSON framing (the
// JSON-RPC library sits on top of it, see conn.go). Reading: lines are
// trimmed (a UTF-8 BOM too), blank lines skipped; a line that is not JSON
// gets -32700, a batch, a non-object message or a malformed envelope
// -32600, a line over the limit (SetMaxLine) is discarded as it is read and
// answered -32600, and the stream keeps serving. Writing: one compact JSON
// object per line, keys in jsonrpc/id/method/params|result|error
// order, no HTML escaping, all writes serialized.
type LineStream struct {
	r       *bufio.Reader
	w       io.Writer
	closer  io.Closer
	log     zerolog.Logger
	maxLine int // inbound line limit (SetMaxLine)

	wmu     sync.Mutex
	idle    *sync.Cond // signalled when a write finishes
	wake    *sync.Cond // signalled when frames are queued or the stream closes
	closed  bool
	started bool   // the writer goroutine runs
	stopped bool   // the writer goroutine ended
	writing bool   // the writer is in a write
	pending []byte // queued frames, newline-terminated
	spare   []byte // the last written buffer, reused
	werr    error  // the first write error; later writes fail with it
}

// NewLineStream frames r and w. closer (may be nil) is closed by Close.
func NewLineStream(r io.Reader, w io.Writer, closer io.Closer, log zerolog.Logger) *LineStream {
	s := &LineStream{r: bufio.NewReaderSize(r, 64<<10), w: w, closer: closer, log: log, maxLine: DefaultMaxLineBytes}
	s.idle = sync.NewCond(&s.wmu)
	s.wake = sync.NewCond(&s.wmu)
	return s
}

// inbound is one well-formed inbound message as the framing read it.
type inbound struct {
	// id is a request's id as received (nil: a notification).
	id json.RawMessage
	// method is a request's or notification's method.
	method string
	// params are its params, a span of the line (nil when absent).
	params json.RawMessage
	// response, for a response to one of our calls, is the whole message.
	response []byte
}

// readMessage returns the next well-formed message (or the read error at
// EOF). Malformed input is answered here and never returned.
func (s *LineStream) readMessage() (inbound, error) {
	for {
		ln, err := s.readLine()
		if ln.over {
			if msg := s.oversized(ln); msg != nil {
				return inbound{response: msg}, nil
			}
		} else if trimmed := trimLine(ln.data); len(trimmed) > 0 {
			m, rpcErr, id := s.inspect(trimmed)
			if rpcErr == nil {
				return m, nil
			}
			if werr := s.reject(trimmed, id, rpcErr); werr != nil {
				return inbound{}, werr
			}
		}
		if err != nil {
			return inbound{}, err
		}
	}
}

// reject answers a malformed line with rpcErr (Code 0: drop it silently).
func (s *LineStream) reject(line []byte, id json.RawMessage, rpcErr *Error) error {
	if rpcErr.Code == 0 {
		return nil
	}
	s.log.Warn().Int64("code", int64(rpcErr.Code)).Str("line", clip(line)).Msg("rejected inbound line")
	return s.WriteFrame(errorFrame(id, rpcErr))
}

// utf8BOM is skipped at the start of a line (editors on Windows write it).
var utf8BOM = []byte("\xEF\xBB\xBF")

// trimLine drops surrounding whitespace (CR included) and a leading BOM.
func trimLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if bytes.HasPrefix(b, utf8BOM) {
		b = bytes.TrimSpace(b[len(utf8BOM):])
	}
	return b
}

// inspect classifies one inbound line: the message it carries, or an error
// to answer with and the id to answer to.
func (s *LineStream) inspect(line []byte) (m inbound, rpcErr *Error, id json.RawMessage) {
	null := json.RawMessage("null")
	if !json.Valid(line) {
		return m, &Error{Code: CodeParseError, Message: "Parse error"}, null
	}
	env, _, ok := scanEnvelope(line)
	if !ok {
		return m, invalidRequest("batch and non-object messages are not supported"), null
	}
	hasID := env.id != nil
	replyID := null
	if hasID && validID(env.id) {
		replyID = env.id
	}
	switch {
	case env.method != nil && (env.result != nil || env.error != nil):
		return m, invalidRequest("a message cannot be both a request and a response"), replyID
	case env.method != nil:
		if hasID && !validID(env.id) {
			return m, invalidRequest("request id must be a string, an integer or null"), null
		}
		if env.method[0] != '"' {
			return m, invalidRequest("method must be a string"), replyID
		}
		if env.jsonrpc != nil && !isString(env.jsonrpc, "2.0") {
			return m, invalidRequest(`jsonrpc must be "2.0"`), replyID
		}
		var method string
		if err := json.Unmarshal(env.method, &method); err != nil {
			return m, invalidRequest("method must be a string"), replyID
		}
		m = inbound{method: method, params: env.params}
		if hasID {
			m.id = env.id
		}
		return m, nil, nil
	case env.result != nil || env.error != nil:
		// A response to one of our calls: ids are our own integers.
		return inbound{response: line}, nil, nil
	}
	return m, invalidRequest("message has neither method nor result/error"), replyID
}

// invalidRequest is -32600 with the reason in data.details.
func invalidRequest(why string) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "Invalid Request", Data: detailsData(why)}
}

// isString reports whether raw is the JSON string want (escapes allowed).
func isString(raw []byte, want string) bool {
	var got string
	return len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &got) == nil && got == want
}

// ErrStreamClosed is returned by writes after Close.
var ErrStreamClosed = errors.New("acp: stream closed")

// maxQueued bounds the bytes queued for stdout; a writer that finds more
// waits, so a client that stops reading slows the agent down instead of
// growing its memory.
const maxQueued = 4 << 20

// WriteFrame queues one pre-encoded JSON message and its newline for the
// stream's writer goroutine, which writes frames in queue order, as many as
// have accumulated per system call: a fast stream of updates costs few
// writes, and a lone frame goes out at once.
func (s *LineStream) WriteFrame(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for len(s.pending) > maxQueued && !s.closed && s.werr == nil {
		s.idle.Wait()
	}
	if s.closed {
		return ErrStreamClosed
	}
	if s.werr != nil {
		return s.werr
	}
	s.pending = append(append(s.pending, b...), '\n')
	if !s.started {
		s.started = true
		go s.writeLoop()
	}
	s.wake.Signal()
	return nil
}

// writeLoop writes queued frames until the stream is closed and drained.
func (s *LineStream) writeLoop() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for {
		for len(s.pending) == 0 && !s.closed {
			s.wake.Wait()
		}
		if len(s.pending) == 0 || s.werr != nil {
			s.stopped = true
			s.idle.Broadcast()
			return
		}
		buf := s.pending
		s.pending = s.spare[:0]
		s.writing = true
		s.wmu.Unlock()
		_, err := s.w.Write(buf)
		s.wmu.Lock()
		s.writing = false
		s.spare = buf[:0]
		if err != nil {
			s.werr = err
		}
		s.idle.Broadcast()
	}
}

// Flush waits until every queued frame has been written.
func (s *LineStream) Flush() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for (len(s.pending) > 0 || s.writing) && s.werr == nil && !s.stopped {
		s.idle.Wait()
	}
	return s.werr
}

// Close writes what is queued, then stops all further writes and closes
// the underlying closer.
func (s *LineStream) Close() error {
	s.wmu.Lock()
	already := s.closed
	s.closed = true
	s.wake.Signal()
	for s.started && !s.stopped {
		s.idle.Wait()
	}
	s.wmu.Unlock()
	if already || s.closer == nil {
		return nil
	}
	return s.closer.Close()
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
