// Package jsonx holds the project's JSON encoding conventions: compact
// output without HTML escaping, so `<`, `>` and `&` stay literal on the wire
// and in session logs.
package jsonx

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Marshal encodes v like json.Marshal but without HTML escaping (and with
// U+2028/U+2029 literal, as JavaScript writes them) and without a trailing
// newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	b = b[:len(b)-1]
	if bytes.Contains(b, []byte(`\u202`)) {
		// encoding/json always escapes U+2028/U+2029; JavaScript does not.
		b = UnescapeHTML(b)
	}
	return b, nil
}

// MustMarshal is Marshal for values that cannot fail to encode (structs of
// plain fields). It panics on error, which signals a programming mistake.
func MustMarshal(v any) json.RawMessage {
	b, err := Marshal(v)
	if err != nil {
		panic("jsonx: " + err.Error())
	}
	return b
}

// Compact returns raw compacted, undoing any HTML escaping an earlier
// json.Marshal applied (\u003c, \u003e, \u0026, \u2028, \u2029 inside
// strings become literal characters again).
func Compact(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return UnescapeHTML(buf.Bytes()), nil
}

// UnescapeHTML rewrites the HTML-safe escapes that encoding/json emits back
// into literal characters. It scans string tokens properly, so an escaped
// backslash followed by "u003c" text is left alone.
func UnescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !inStr {
			if c == '"' {
				inStr = true
			}
			out = append(out, c)
			continue
		}
		switch c {
		case '"':
			inStr = false
			out = append(out, c)
		case '\\':
			if i+5 < len(b) && b[i+1] == 'u' {
				switch string(b[i+2 : i+6]) {
				case "003c", "003C":
					out = append(out, '<')
					i += 5
					continue
				case "003e", "003E":
					out = append(out, '>')
					i += 5
					continue
				case "0026":
					out = append(out, '&')
					i += 5
					continue
				case "2028":
					out = append(out, "\u2028"...)
					i += 5
					continue
				case "2029":
					out = append(out, "\u2029"...)
					i += 5
					continue
				}
			}
			out = append(out, c)
			if i+1 < len(b) {
				i++
				out = append(out, b[i])
			}
		default:
			out = append(out, c)
		}
	}
	return out
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string the way JavaScript's
// JSON.stringify writes it: only `"`, `\` and control characters are
// escaped; invalid UTF-8 becomes U+FFFD (as encoding/json does).
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const utf8RuneSelf = 0x80
