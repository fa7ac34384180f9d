package session

import (
	"bytes"
	"unicode/utf8"
)

// parseCanonical reads an event line in the form this build writes
// ({"type","seq","time","data", then sourceEventSeqs and surfaceOp
// "append" in either order}, data a compact object with no \u escapes)
// without encoding/json: a 1,000-turn session/load parses some 100,000
// such lines. It reports false for any other line, which the general
// decoder then reads; where it reports true the general decoder gives the
// same Event (FuzzEventFastPath). With alias, Data shares b's memory.
func parseCanonical(b []byte, alias bool) (Event, bool) {
	var e Event
	ok := parseCanonicalTo(&e, b, alias)
	return e, ok
}

// parseCanonicalTo is parseCanonical into *e (which it overwrites; zero
// when it reports false), so a store parsing a file fills its slice in
// place.
func parseCanonicalTo(e *Event, b []byte, alias bool) bool {
	*e = Event{}
	rest, ok := cutPrefix(b, `{"type":"`)
	if !ok {
		return e.reset()
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return e.reset()
	}
	typ := rest[:i]
	for _, c := range typ {
		if c < 0x20 || c >= 0x7f || c == '\\' { // event types are plain ASCII
			return e.reset()
		}
	}
	rest = rest[i+1:]
	if rest, ok = cutPrefix(rest, `,"seq":`); !ok {
		return e.reset()
	}
	var seq int64
	if seq, rest, ok = leadingInt(rest, false); !ok {
		return e.reset()
	}
	if rest, ok = cutPrefix(rest, `,"time":`); !ok {
		return e.reset()
	}
	if e.Time, rest, ok = leadingInt(rest, true); !ok {
		return e.reset()
	}
	if rest, ok = cutPrefix(rest, `,"data":`); !ok {
		return e.reset()
	}
	body, ok := cutSuffix(rest, "}")
	if !ok {
		return e.reset()
	}
	// The optional keys, read from the end: data is an object, so what
	// follows its closing brace is theirs.
	sawOp, sawSeqs := false, false
	for range 2 {
		if hasSuffix(body, `,"surfaceOp":"append"`) && !sawOp {
			body = body[:len(body)-len(`,"surfaceOp":"append"`)]
			sawOp = true
			e.SurfaceOpFirst = sawSeqs
			continue
		}
		if hasSuffix(body, "]") && !sawSeqs {
			j := bytes.LastIndex(body, []byte(`,"sourceEventSeqs":[`))
			if j < 0 {
				return e.reset()
			}
			seqs, ok := parseInts(body[j+len(`,"sourceEventSeqs":[`) : len(body)-1])
			if !ok {
				return e.reset()
			}
			e.SourceEventSeqs, body, sawSeqs = seqs, body[:j], true
			continue
		}
		break
	}
	if !sawOp || !sawSeqs {
		e.SurfaceOpFirst = false
	}
	if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' {
		return e.reset()
	}
	// A chunk in the shape ChunkDeltaBytes reads is valid compact JSON
	// with no \u escape: it needs no second scan.
	chunk := false
	if string(typ) == TypeAssistantChunk {
		var kind, text []byte
		if kind, text, chunk = ChunkDeltaBytes(body); chunk {
			e.delta = locateDelta(body, kind, text)
		}
	}
	if !chunk {
		if n, ok := scanValue(body, 0, 0); !ok || n != len(body) {
			return e.reset()
		}
	}
	e.Type, e.Seq = eventType(typ), int(seq)
	e.Data = body
	if !alias {
		e.Data = bytes.Clone(body)
	}
	if sawOp {
		e.SurfaceOp = SurfaceAppend
	}
	return true
}

// reset zeroes e and reports false.
func (e *Event) reset() bool {
	*e = Event{}
	return false
}

// cutPrefix is bytes.CutPrefix with a constant prefix, which the
// compiler then compares inline.
func cutPrefix(b []byte, prefix string) ([]byte, bool) {
	if len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix {
		return b[len(prefix):], true
	}
	return b, false
}

// hasSuffix is bytes.HasSuffix with a constant suffix.
func hasSuffix(b []byte, suffix string) bool {
	return len(b) >= len(suffix) && string(b[len(b)-len(suffix):]) == suffix
}

// cutSuffix is bytes.CutSuffix with a constant suffix.
func cutSuffix(b []byte, suffix string) ([]byte, bool) {
	if hasSuffix(b, suffix) {
		return b[:len(b)-len(suffix)], true
	}
	return b, false
}

// eventType is string(b), without allocating for the core types.
func eventType(b []byte) string {
	switch string(b) {
	case TypeAssistantChunk:
		return TypeAssistantChunk
	case TypeAssistantMessage:
		return TypeAssistantMessage
	case TypeStepStart:
		return TypeStepStart
	case TypeStepEnd:
		return TypeStepEnd
	case TypeTurnStart:
		return TypeTurnStart
	case TypeTurnEnd:
		return TypeTurnEnd
	case TypeUserMessage:
		return TypeUserMessage
	case TypeToolCall:
		return TypeToolCall
	case TypeToolResult:
		return TypeToolResult
	case TypeContextMessage:
		return TypeContextMessage
	case TypeRequestHeader:
		return TypeRequestHeader
	case TypeRequestHeaderDelta:
		return TypeRequestHeaderDelta
	}
	return string(b)
}

// leadingInt reads the decimal integer b starts with (no leading zeros,
// a minus only when neg is allowed, at most 18 digits).
func leadingInt(b []byte, neg bool) (int64, []byte, bool) {
	sign, i := int64(1), 0
	if neg && len(b) > 0 && b[0] == '-' {
		sign, i = -1, 1
	}
	start := i
	var n int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 18 || (digits > 1 && b[start] == '0') {
		return 0, nil, false
	}
	return sign * n, b[i:], true
}

// parseInts reads a comma-separated list of non-negative integers.
func parseInts(b []byte) ([]int, bool) {
	out := []int{}
	if len(b) == 0 {
		return out, true
	}
	for {
		n, rest, ok := leadingInt(b, false)
		if !ok {
			return nil, false
		}
		out = append(out, int(n))
		if len(rest) == 0 {
			return out, true
		}
		if rest[0] != ',' {
			return nil, false
		}
		b = rest[1:]
	}
}

// scanValue checks the JSON value starting at b[i] and returns the index
// just past it. It accepts only compact JSON (no whitespace between
// tokens) whose strings hold no \u escape, so the value is what
// jsonx.Compact would give back unchanged.
func scanValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > 200 {
		return 0, false
	}
	switch c := b[i]; {
	case c == '{':
		i++
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			var ok bool
			if i, ok = scanString(b, i); !ok || i >= len(b) || b[i] != ':' {
				return 0, false
			}
			if i, ok = scanValue(b, i+1, depth+1); !ok || i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case ',':
				i++
			case '}':
				return i + 1, true
			default:
				return 0, false
			}
		}
	case c == '[':
		i++
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = scanValue(b, i, depth+1); !ok || i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case ',':
				i++
			case ']':
				return i + 1, true
			default:
				return 0, false
			}
		}
	case c == '"':
		return scanString(b, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumber(b, i)
	case bytes.HasPrefix(b[i:], []byte("true")):
		return i + 4, true
	case bytes.HasPrefix(b[i:], []byte("false")):
		return i + 5, true
	case bytes.HasPrefix(b[i:], []byte("null")):
		return i + 4, true
	}
	return 0, false
}

// scanString checks the string starting at b[i] (a quote).
func scanString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			i++
			if i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			default: // \u (jsonx.Compact may rewrite it) or invalid
				return 0, false
			}
		}
	}
	return 0, false
}

// scanNumber checks the number starting at b[i].
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	start := i
	if n := digits(); n == 0 || (n > 1 && b[start] == '0') {
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, false
		}
	}
	return i, true
}

// chunkAt is where an assistant/chunk's delta lies in its data: the
// kind at [kind, kind+kindLen), the text from text to the closing "}}
// (text is 0 when unknown).
type chunkAt struct {
	kindLen    uint8
	kind, text uint16
}

// locateDelta is the chunkAt of kind and text, which ChunkDeltaBytes
// found in data (zero when the offsets do not fit).
func locateDelta(data, kind, text []byte) chunkAt {
	k, t := cap(data)-cap(kind), len(data)-len(text)-len(`"}}`)
	if len(data) > 0xffff || len(kind) > 0xff {
		return chunkAt{}
	}
	return chunkAt{kindLen: uint8(len(kind)), kind: uint16(k), text: uint16(t)}
}

// ChunkDeltaBytes is ChunkDeltaBytes(e.Data). For an event a store read
// back (ParseLine, UnmarshalJSON) it costs nothing: the parse, which
// checked the shape, noted where the delta lies.
func (e *Event) ChunkDeltaBytes() (kind, text []byte, ok bool) {
	d, at := e.Data, e.delta
	k, t := int(at.kind), int(at.text)
	if k > 0 && t+len(`"}}`) <= len(d) && k+int(at.kindLen) < t && d[k-1] == '"' && d[t-1] == '"' && string(d[len(d)-3:]) == `"}}` {
		return d[k : k+int(at.kindLen)], d[t : len(d)-3], true
	}
	return ChunkDeltaBytes(d)
}

// ChunkDelta reads the chunk type and delta text of an assistant/chunk
// event's data, {"turn":…,"step":…,"chunk":{"type":…,"index":…,"text":…}}
// as this build writes it, without encoding/json; ok is false for any
// other shape (a chunk without text, escapes in the text), which the
// caller then decodes in full.
func ChunkDelta(data []byte) (kind, text string, ok bool) {
	k, t, ok := ChunkDeltaBytes(data)
	if !ok {
		return "", "", false
	}
	return string(k), string(t), true
}

// ChunkDeltaBytes is ChunkDelta without copying: kind and text share
// data's memory.
func ChunkDeltaBytes(data []byte) (kind, text []byte, ok bool) {
	rest, ok := cutPrefix(data, `{"turn":`)
	if !ok {
		return nil, nil, false
	}
	if _, rest, ok = leadingInt(rest, true); !ok {
		return nil, nil, false
	}
	if rest, ok = cutPrefix(rest, `,"step":`); !ok {
		return nil, nil, false
	}
	if _, rest, ok = leadingInt(rest, true); !ok {
		return nil, nil, false
	}
	if rest, ok = cutPrefix(rest, `,"chunk":{"type":"`); !ok {
		return nil, nil, false
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return nil, nil, false
	}
	k := rest[:i]
	for _, c := range k {
		if c < 0x20 || c >= 0x7f || c == '\\' { // chunk types are plain ASCII
			return nil, nil, false
		}
	}
	if rest, ok = cutPrefix(rest[i+1:], `,"index":`); !ok {
		return nil, nil, false
	}
	if _, rest, ok = leadingInt(rest, true); !ok {
		return nil, nil, false
	}
	if rest, ok = cutPrefix(rest, `,"text":"`); !ok {
		return nil, nil, false
	}
	t, ok := cutSuffix(rest, `"}}`)
	if !ok {
		return nil, nil, false
	}
	// One pass: no quote, backslash or control byte (k has none: it ends
	// at the first quote and was checked above), and valid UTF-8 (the
	// decoder would replace what is not).
	for i := 0; i < len(t); {
		c := t[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' {
				return nil, nil, false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(t[i:])
		if r == utf8.RuneError && n == 1 {
			return nil, nil, false
		}
		i += n
	}
	return k, t, true
}
