package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// corruptError reports a session log that cannot be loaded. Its text is the
// contract message (msg), or the cause's text alone when msg is empty (the
// header version error of session.Header.UnmarshalJSON).
type corruptError struct {
	msg string
	err error
}

func (e *corruptError) Error() string {
	switch {
	case e.err == nil:
		return e.msg
	case e.msg == "":
		return e.err.Error()
	}
	return e.msg + ": " + e.err.Error()
}

func (e *corruptError) Unwrap() error { return e.err }

func corruptf(format string, args ...any) error {
	return &corruptError{msg: fmt.Sprintf(format, args...)}
}

// parseHeader reads line 0 (without its newline).
func parseHeader(line []byte) (session.Header, error) {
	if !json.Valid(line) {
		return session.Header{}, corruptf("corrupt session log: header line is not valid JSON")
	}
	var probe struct {
		Type    *string         `json:"type"`
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(line, &probe); err != nil || probe.Type == nil || *probe.Type != "session" {
		return session.Header{}, corruptf("corrupt session log: first line is not a session header")
	}
	var h session.Header
	if err := h.UnmarshalJSON(line); err != nil {
		if string(probe.Version) == "0" {
			return session.Header{}, &corruptError{msg: "corrupt session log: invalid session header", err: err}
		}
		return session.Header{}, &corruptError{err: err}
	}
	return h, nil
}

// readHeader reads and parses only the first line of the file at path.
func readHeader(path string) (session.Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return session.Header{}, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return session.Header{}, fmt.Errorf("read %s: %w", path, err)
	}
	return parseHeader(bytes.TrimSuffix(line, []byte{'\n'}))
}

// readLog reads the log at path, checks that its header names id, and
// returns the kept prefix of events. A torn tail is truncated away durably.
// No crash repair is applied.
func readLog(path, id string) (session.Header, []session.Event, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return session.Header{}, nil, err
	}
	nl := bytes.IndexByte(data, '\n')
	headerLine := data
	if nl >= 0 {
		headerLine = data[:nl]
	}
	h, err := parseHeader(headerLine)
	if err != nil {
		return session.Header{}, nil, err
	}
	if h.ID != id {
		return session.Header{}, nil, corruptf("corrupt session log: header id %q does not match session %q", h.ID, id)
	}
	if nl < 0 {
		if err := truncateDurable(path, int64(len(data)), true); err != nil {
			return session.Header{}, nil, err
		}
		return h, nil, nil
	}
	lines := bytes.Count(data[nl+1:], []byte{'\n'}) + 1
	events := make([]session.Event, 0, lines)
	parsed := make([]bool, 0, lines)
	ends := make([]int, 0, lines) // byte offset just past each candidate line
	pos := nl + 1
	for pos < len(data) {
		i := bytes.IndexByte(data[pos:], '\n')
		if i < 0 {
			events, parsed = append(events, session.Event{}), append(parsed, false) // unterminated: torn
			ends = append(ends, len(data))
			break
		}
		events = append(events, session.Event{})
		err := session.ParseLineTo(&events[len(events)-1], data[pos:pos+i]) // data is not changed again
		parsed = append(parsed, err == nil)
		pos += i + 1
		ends = append(ends, pos)
	}
	n, err := session.CommittedPrefixOf(events, parsed)
	if err != nil {
		return session.Header{}, nil, err
	}
	keep := nl + 1
	if n > 0 {
		keep = ends[n-1]
	}
	if keep < len(data) {
		if err := truncateDurable(path, int64(keep), false); err != nil {
			return session.Header{}, nil, err
		}
	}
	events = events[:n:n]
	return h, events, nil
}

// encodeEvents renders events as JSONL lines. Data and SurfaceOp are
// compacted (and HTML escapes undone) so every line is one valid JSON object
// that reloads to an identical Event.
func encodeEvents(events []session.Event) ([]byte, error) {
	var buf bytes.Buffer
	for _, ev := range events {
		// A line break can only be whitespace in JSON (strings escape it),
		// so data without one is already a single line.
		if len(ev.Data) > 0 && bytes.ContainsAny(ev.Data, "\r\n") {
			d, err := jsonx.Compact(ev.Data)
			if err != nil {
				return nil, fmt.Errorf("event %d (%s): data: %w", ev.Seq, ev.Type, err)
			}
			ev.Data = d
		}
		if ev.SurfaceOp != nil {
			op, err := jsonx.Compact(ev.SurfaceOp)
			if err != nil {
				return nil, fmt.Errorf("event %d (%s): surfaceOp: %w", ev.Seq, ev.Type, err)
			}
			ev.SurfaceOp = op
		}
		line, err := ev.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("event %d (%s): %w", ev.Seq, ev.Type, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// ReadBack implements session.Reader: the first n events of the stored
// log of id, read without truncating or repairing anything (the session's
// writes are serialized with it, so a held log is read whole).
func (s *Store) ReadBack(ctx context.Context, id string, n int) ([]session.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, err := EncodeID(id)
	if err != nil {
		return nil, fmt.Errorf("read back session %q: %w", id, err)
	}
	e, err := s.lockEntry(id)
	if err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	path := e.path
	if path == "" {
		if path, err = s.find(name); err != nil {
			return nil, fmt.Errorf("read back session %q: %w", id, err)
		}
		if path == "" {
			return nil, &NotFoundError{ID: id}
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read back session %q: %w", id, err)
	}
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		nl = len(data)
	}
	h, err := parseHeader(data[:nl])
	if err != nil {
		return nil, err
	}
	if h.ID != id {
		return nil, corruptf("corrupt session log: header id %q does not match session %q", h.ID, id)
	}
	events := make([]session.Event, 0, n)
	rest := data[min(nl+1, len(data)):]
	for len(events) < n {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return nil, fmt.Errorf("read back session %q: %d events stored, %d asked for", id, len(events), n)
		}
		var ev session.Event
		if err := ev.UnmarshalJSON(rest[:i]); err != nil || ev.Seq != len(events) {
			return nil, corruptf("corrupt session log: event line %d of session %q does not read back", len(events)+1, id)
		}
		events = append(events, ev)
		rest = rest[i+1:]
	}
	return events, nil
}
