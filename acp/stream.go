package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// rawIDPrefix marks a jsonrpc2 string ID that carries the raw JSON of an
// inbound request id, so every id the ACP schema allows (strings, null and
// integers of any spelling or size) is echoed exactly as received.
const rawIDPrefix = "\x00raw:"

// LineStream is the project-owned newline-delimited JSON framing under
// sourcegraph/jsonrpc2. Reading: lines are trimmed (a UTF-8 BOM too), blank
// lines skipped; a line that is not JSON gets -32700, a batch, a non-object
// message or a malformed envelope -32600, a line over the limit (SetMaxLine)
// is discarded as it is read and answered -32600, and the stream keeps
// serving. Writing: one
// compact JSON object per line, keys in jsonrpc/id/method/params|result|error
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

	pmu     sync.Mutex
	params  map[uint64]json.RawMessage // inbound params, kept out of jsonrpc2's re-encoding
	nextKey uint64
}

// NewLineStream frames r and w. closer (may be nil) is closed by Close.
func NewLineStream(r io.Reader, w io.Writer, closer io.Closer, log zerolog.Logger) *LineStream {
	s := &LineStream{r: bufio.NewReaderSize(r, 64<<10), w: w, closer: closer, log: log, maxLine: DefaultMaxLineBytes, params: map[uint64]json.RawMessage{}}
	s.idle = sync.NewCond(&s.wmu)
	s.wake = sync.NewCond(&s.wmu)
	return s
}

// ReadObject implements jsonrpc2.ObjectStream. It answers malformed input
// itself and returns only well-formed messages (or the read error at EOF).
func (s *LineStream) ReadObject(v any) error {
	for {
		ln, err := s.readLine()
		if ln.over {
			if msg := s.oversized(ln); msg != nil {
				if uerr := json.Unmarshal(msg, v); uerr == nil {
					return nil
				}
			}
		} else if trimmed := trimLine(ln.data); len(trimmed) > 0 {
			msg, rpcErr, id := s.inspect(trimmed)
			if rpcErr == nil {
				if uerr := json.Unmarshal(msg, v); uerr == nil {
					return nil
				} else {
					rpcErr = &Error{Code: jsonrpc2.CodeInvalidRequest, Message: "Invalid Request", Data: detailsData(uerr.Error())}
				}
			}
			if rpcErr.Code != 0 {
				s.log.Warn().Int64("code", rpcErr.Code).Str("line", clip(trimmed)).Msg("rejected inbound line")
				if werr := s.WriteFrame(errorFrame(id, rpcErr)); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			return err
		}
	}
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

// inspect classifies one inbound line. It returns the message to hand to
// jsonrpc2 (request ids rewritten to raw-id tokens, params set aside under a
// key in "meta" so jsonrpc2 never re-encodes them), or an error to answer
// with (Code 0: drop silently) and the id to answer to.
func (s *LineStream) inspect(line []byte) (msg []byte, rpcErr *Error, id json.RawMessage) {
	null := json.RawMessage("null")
	if !json.Valid(line) {
		return nil, &Error{Code: jsonrpc2.CodeParseError, Message: "Parse error"}, null
	}
	env, _, ok := scanEnvelope(line)
	if !ok {
		return nil, invalidRequest("batch and non-object messages are not supported"), null
	}
	hasID := env.id != nil
	replyID := null
	if hasID && validID(env.id) {
		replyID = env.id
	}
	switch {
	case env.method != nil && (env.result != nil || env.error != nil):
		return nil, invalidRequest("a message cannot be both a request and a response"), replyID
	case env.method != nil:
		if hasID && !validID(env.id) {
			return nil, invalidRequest("request id must be a string, an integer or null"), null
		}
		if env.method[0] != '"' {
			return nil, invalidRequest("method must be a string"), replyID
		}
		if env.jsonrpc != nil && !isString(env.jsonrpc, "2.0") {
			return nil, invalidRequest(`jsonrpc must be "2.0"`), replyID
		}
		var method string
		if err := json.Unmarshal(env.method, &method); err != nil {
			return nil, invalidRequest("method must be a string"), replyID
		}
		var b bytes.Buffer
		b.WriteString(`{"jsonrpc":"2.0"`)
		if hasID {
			tok, _ := jsonx.Marshal(rawIDPrefix + string(env.id))
			b.WriteString(`,"id":`)
			b.Write(tok)
		}
		m, _ := jsonx.Marshal(method)
		b.WriteString(`,"method":`)
		b.Write(m)
		if env.params != nil {
			s.pmu.Lock()
			key := s.nextKey
			s.nextKey++
			s.params[key] = env.params // a span of line: no copy
			s.pmu.Unlock()
			b.WriteString(`,"meta":`)
			b.WriteString(strconv.FormatUint(key, 10))
		}
		b.WriteByte('}')
		return b.Bytes(), nil, nil
	case env.result != nil || env.error != nil:
		// A response to one of our calls: ids are our own integers.
		return line, nil, nil
	}
	return nil, invalidRequest("message has neither method nor result/error"), replyID
}

// invalidRequest is -32600 with the reason in data.details.
func invalidRequest(why string) *Error {
	return &Error{Code: jsonrpc2.CodeInvalidRequest, Message: "Invalid Request", Data: detailsData(why)}
}

// isString reports whether raw is the JSON string want (escapes allowed).
func isString(raw []byte, want string) bool {
	var got string
	return len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &got) == nil && got == want
}

// TakeParams returns (and forgets) the params ReadObject set aside for a
// request; ok is false when the request carried none.
func (s *LineStream) TakeParams(meta *json.RawMessage) (json.RawMessage, bool) {
	if meta == nil {
		return nil, false
	}
	key, err := strconv.ParseUint(string(*meta), 10, 64)
	if err != nil {
		return nil, false
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	p, ok := s.params[key]
	delete(s.params, key)
	return p, ok
}

// WireID returns the JSON to emit for a jsonrpc2 ID: the raw inbound id for
// tokens made by ReadObject, else the ID's own encoding.
func WireID(id jsonrpc2.ID) json.RawMessage {
	if id.IsString && strings.HasPrefix(id.Str, rawIDPrefix) {
		return json.RawMessage(id.Str[len(rawIDPrefix):])
	}
	b, _ := jsonx.Marshal(id)
	return b
}

// WriteObject implements jsonrpc2.ObjectStream for the messages jsonrpc2
// writes itself (our outbound calls): it re-frames them in contract key
// order without HTML escaping.
func (s *LineStream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var m struct {
		ID     *jsonrpc2.ID     `json:"id"`
		Method *string          `json:"method"`
		Params json.RawMessage  `json:"params"`
		Result json.RawMessage  `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	var out bytes.Buffer
	out.WriteString(`{"jsonrpc":"2.0"`)
	if m.ID != nil {
		out.WriteString(`,"id":`)
		out.Write(WireID(*m.ID))
	}
	if m.Method != nil {
		mb, _ := jsonx.Marshal(*m.Method)
		out.WriteString(`,"method":`)
		out.Write(mb)
		if m.Params != nil {
			out.WriteString(`,"params":`)
			out.Write(jsonx.UnescapeHTML(m.Params))
		}
	} else if m.Error != nil {
		out.WriteString(`,"error":`)
		out.Write(jsonx.UnescapeHTML(*m.Error))
	} else {
		out.WriteString(`,"result":`)
		if m.Result == nil {
			out.WriteString("null")
		} else {
			out.Write(jsonx.UnescapeHTML(m.Result))
		}
	}
	out.WriteByte('}')
	return s.WriteFrame(out.Bytes())
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
