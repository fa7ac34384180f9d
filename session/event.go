// Package session owns the session log: the append-only sequence of events
// that is the single source of truth for a conversation, the folds computed
// from it, and the stores that persist it.
package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// FormatVersion is the only session log format version this build reads.
const FormatVersion = 0

// Header is line 0 of a session log.
type Header struct {
	ID            string
	CreatedAt     int64
	Cwd           string // empty: absent
	ParentSession string // empty: absent
	SeedLength    int    // 0: absent
	Version       int
}

type headerJSON struct {
	Type          string `json:"type"`
	Version       int    `json:"version"`
	ID            string `json:"id"`
	CreatedAt     int64  `json:"createdAt"`
	Cwd           string `json:"cwd,omitempty"`
	ParentSession string `json:"parentSession,omitempty"`
	SeedLength    int    `json:"seedLength,omitempty"`
}

// MarshalJSON emits the header in contract key order.
func (h Header) MarshalJSON() ([]byte, error) {
	return jsonx.Marshal(headerJSON{"session", h.Version, h.ID, h.CreatedAt, h.Cwd, h.ParentSession, h.SeedLength})
}

// UnmarshalJSON reads a header line and checks its type and version.
func (h *Header) UnmarshalJSON(b []byte) error {
	var j headerJSON
	j.Version = -1
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Type != "session" {
		return fmt.Errorf("not a session header (type %q)", j.Type)
	}
	if j.Version != FormatVersion {
		return fmt.Errorf("unsupported session format version %d for %q (only v0 is supported)", j.Version, j.ID)
	}
	*h = Header{ID: j.ID, CreatedAt: j.CreatedAt, Cwd: j.Cwd, ParentSession: j.ParentSession, SeedLength: j.SeedLength, Version: j.Version}
	return nil
}

// Event is one line of the log after the header.
type Event struct {
	Type string
	Seq  int
	Time int64
	Data json.RawMessage
	// SourceEventSeqs is emitted when non-nil (surface events only).
	SourceEventSeqs []int
	// SurfaceOp is emitted when non-nil (surface events only), e.g. "append".
	SurfaceOp json.RawMessage
	// SurfaceOpFirst emits surfaceOp before sourceEventSeqs, the key order
	// of the synthetic crash-repair tool result.
	SurfaceOpFirst bool
	// delta locates an assistant/chunk's delta in Data, as the parse that
	// read Data found it (see Event.ChunkDeltaBytes); it fits the padding
	// after SurfaceOpFirst, so an event is no larger.
	delta chunkAt
	// Payload is the value the event was appended with (in memory only; nil
	// for events read back from a store). Subscribers may use it to skip
	// decoding Data.
	Payload any
	// run is a contiguous SourceEventSeqs kept without its slice (a Log
	// over a Reader keeps a message's chunk seqs so): from, from+1, …,
	// from+n-1, when SourceEventSeqs is nil and n > 0.
	run struct{ from, n int32 }
}

// Sources returns the event's sourceEventSeqs (nil when it has none).
// Read it rather than SourceEventSeqs from events a Log keeps.
func (e Event) Sources() []int {
	if e.SourceEventSeqs != nil || e.run.n == 0 {
		return e.SourceEventSeqs
	}
	seqs := make([]int, e.run.n)
	for i := range seqs {
		seqs[i] = int(e.run.from) + i
	}
	return seqs
}

// packSources keeps a contiguous ascending SourceEventSeqs of more than
// two seqs as its run.
func (e *Event) packSources() {
	s := e.SourceEventSeqs
	if len(s) < 3 || s[0] < 0 || s[len(s)-1] != s[0]+len(s)-1 || s[len(s)-1] > math.MaxInt32 {
		return
	}
	for i := 1; i < len(s); i++ {
		if s[i] != s[i-1]+1 {
			return
		}
	}
	e.run.from, e.run.n = int32(s[0]), int32(len(s))
	e.SourceEventSeqs = nil
}

// SurfaceAppend is the surfaceOp every composition here writes.
var SurfaceAppend = json.RawMessage(`"append"`)

// MarshalJSON emits the envelope in contract key order.
func (e Event) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(e.Data) + 64)
	b.WriteString(`{"type":`)
	b.Write(jsonx.AppendString(nil, e.Type))
	b.WriteString(`,"seq":`)
	b.WriteString(strconv.Itoa(e.Seq))
	b.WriteString(`,"time":`)
	b.WriteString(strconv.FormatInt(e.Time, 10))
	b.WriteString(`,"data":`)
	if len(e.Data) == 0 {
		b.WriteString("{}")
	} else {
		b.Write(e.Data)
	}
	writeSeqs := func() {
		if seqs := e.Sources(); seqs != nil {
			b.WriteString(`,"sourceEventSeqs":[`)
			for i, s := range seqs {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.Itoa(s))
			}
			b.WriteByte(']')
		}
	}
	writeOp := func() {
		if e.SurfaceOp != nil {
			b.WriteString(`,"surfaceOp":`)
			b.Write(e.SurfaceOp)
		}
	}
	if e.SurfaceOpFirst {
		writeOp()
		writeSeqs()
	} else {
		writeSeqs()
		writeOp()
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an event line, remembering the surfaceOp/sourceEventSeqs
// key order so a reloaded event re-serializes identically.
func (e *Event) UnmarshalJSON(b []byte) error {
	if c, ok := parseCanonical(b, false); ok {
		*e = c
		return nil
	}
	return e.unmarshalSlow(b)
}

// ParseLine reads one event line like UnmarshalJSON, except that the
// event's Data may share line's memory (a store reading a whole file
// keeps one buffer instead of a copy per event); line must not change
// afterwards.
func ParseLine(line []byte) (Event, error) {
	if c, ok := parseCanonical(line, true); ok {
		return c, nil
	}
	var e Event
	err := e.unmarshalSlow(line)
	return e, err
}

// ParseLineTo is ParseLine into *e, which it overwrites.
func ParseLineTo(e *Event, line []byte) error {
	if parseCanonicalTo(e, line, true) {
		return nil
	}
	return e.unmarshalSlow(line)
}

// unmarshalSlow is UnmarshalJSON for any valid line.
func (e *Event) unmarshalSlow(b []byte) error {
	var j struct {
		Type            *string         `json:"type"`
		Seq             *int            `json:"seq"`
		Time            int64           `json:"time"`
		Data            json.RawMessage `json:"data"`
		SourceEventSeqs []int           `json:"sourceEventSeqs"`
		SurfaceOp       json.RawMessage `json:"surfaceOp"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Type == nil || j.Seq == nil {
		return fmt.Errorf("event line lacks type or seq")
	}
	data, err := jsonx.Compact(j.Data)
	if err != nil && len(j.Data) > 0 {
		return err
	}
	*e = Event{Type: *j.Type, Seq: *j.Seq, Time: j.Time, Data: data, SourceEventSeqs: j.SourceEventSeqs, SurfaceOp: j.SurfaceOp}
	if j.SurfaceOp != nil && j.SourceEventSeqs != nil {
		e.SurfaceOpFirst = bytes.Index(b, []byte(`"surfaceOp"`)) < bytes.Index(b, []byte(`"sourceEventSeqs"`))
	}
	if e.Type == TypeAssistantChunk {
		if kind, text, ok := ChunkDeltaBytes(e.Data); ok {
			e.delta = locateDelta(e.Data, kind, text)
		}
	}
	return nil
}

// Decode unmarshals the event's data into v.
func (e Event) Decode(v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("decode %s event %d: %w", e.Type, e.Seq, err)
	}
	return nil
}
