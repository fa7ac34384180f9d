package snapshots

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/internal/textenc"
)

// ParseJS parses one JSON text like JavaScript's JSON.parse. Input that is
// not valid UTF-8 is first decoded the way a WHATWG UTF-8 decoder (Node's
// Buffer#toString) does, invalid sequences becoming U+FFFD.
func ParseJS(data []byte) (*JSValue, error) {
	if !utf8.Valid(data) {
		data = []byte(textenc.DecodeUTF8(data))
	}
	p := &jsParser{data: data}
	p.skipWS()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipWS()
	if p.pos < len(p.data) {
		return nil, p.errorf("unexpected %q after JSON value", p.data[p.pos])
	}
	return v, nil
}

// StringifyJS is JSON.stringify(JSON.parse(raw)) as JavaScript computes it.
func StringifyJS(raw []byte) ([]byte, error) {
	v, err := ParseJS(raw)
	if err != nil {
		return nil, err
	}
	return v.Stringify(), nil
}

type jsParser struct {
	data []byte
	pos  int
}

func (p *jsParser) errorf(format string, args ...any) error {
	return fmt.Errorf("JSON parse error at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *jsParser) skipWS() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsParser) literal(word string, v *JSValue) (*JSValue, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return nil, p.errorf("invalid literal")
	}
	p.pos += len(word)
	return v, nil
}

func (p *jsParser) value(depth int) (*JSValue, error) {
	if depth > maxParseDepth {
		return nil, p.errorf("nesting deeper than %d", maxParseDepth)
	}
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of JSON input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.string()
		if err != nil {
			return nil, err
		}
		return NewJSString(s), nil
	case c == 't':
		return p.literal("true", NewJSBool(true))
	case c == 'f':
		return p.literal("false", NewJSBool(false))
	case c == 'n':
		return p.literal("null", NewJSNull())
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.errorf("unexpected %q", c)
	}
}

// elements parses the comma-separated elements of an object or array whose
// opening bracket is at p.pos, calling each with p.pos on an element, up to
// and including the closing bracket.
func (p *jsParser) elements(closing byte, each func() error) error {
	p.pos++ // opening bracket
	p.skipWS()
	if p.pos < len(p.data) && p.data[p.pos] == closing {
		p.pos++
		return nil
	}
	for {
		p.skipWS()
		if err := each(); err != nil {
			return err
		}
		p.skipWS()
		switch {
		case p.pos >= len(p.data):
			return p.errorf("unexpected end of JSON input")
		case p.data[p.pos] == ',':
			p.pos++
		case p.data[p.pos] == closing:
			p.pos++
			return nil
		default:
			return p.errorf("expected ',' or %q", closing)
		}
	}
}

func (p *jsParser) object(depth int) (*JSValue, error) {
	obj := NewJSObject()
	err := p.elements('}', func() error {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.errorf("expected a string key")
		}
		key, err := p.string()
		if err != nil {
			return err
		}
		p.skipWS()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.errorf("expected ':'")
		}
		p.pos++
		p.skipWS()
		val, err := p.value(depth + 1)
		if err == nil {
			obj.Set(key, val)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func (p *jsParser) array(depth int) (*JSValue, error) {
	arr := NewJSArray()
	err := p.elements(']', func() error {
		val, err := p.value(depth + 1)
		if err == nil {
			arr.items = append(arr.items, val)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return arr, nil
}

func (p *jsParser) number() (*JSValue, error) {
	start := p.pos
	d := p.data
	digits := func() int {
		n := 0
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if d[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(d) && d[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return nil, p.errorf("invalid number")
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	// The grammar is checked; a range error still yields ±Inf or 0 as in JS.
	f, _ := strconv.ParseFloat(string(d[start:p.pos]), 64)
	return NewJSNumber(f), nil
}

// hex4 reads the four hex digits of a \u escape starting at i.
func (p *jsParser) hex4(i int) (uint16, bool) {
	if i+4 > len(p.data) {
		return 0, false
	}
	u, err := strconv.ParseUint(string(p.data[i:i+4]), 16, 16)
	return uint16(u), err == nil
}

func (p *jsParser) string() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	d := p.data
	for p.pos < len(d) && d[p.pos] != '"' && d[p.pos] != '\\' && d[p.pos] >= 0x20 {
		p.pos++
	}
	if p.pos < len(d) && d[p.pos] == '"' {
		p.pos++
		return string(d[start : p.pos-1]), nil
	}
	var b strings.Builder
	b.Write(d[start:p.pos])
	for {
		if p.pos >= len(d) {
			return "", p.errorf("unterminated string")
		}
		c := d[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.errorf("bad control character in string")
		case c != '\\':
			b.WriteByte(c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(d) {
			return "", p.errorf("unterminated string")
		}
		esc := d[p.pos+1]
		p.pos += 2
		switch esc {
		case '"', '\\', '/':
			b.WriteByte(esc)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			u, ok := p.hex4(p.pos)
			if !ok {
				return "", p.errorf("bad \\u escape")
			}
			p.pos += 4
			if u >= 0xD800 && u < 0xDC00 && p.pos+1 < len(d) && d[p.pos] == '\\' && d[p.pos+1] == 'u' {
				if lo, ok := p.hex4(p.pos + 2); ok && lo >= 0xDC00 && lo < 0xE000 {
					p.pos += 6
					b.WriteRune(0x10000 + (rune(u)-0xD800)<<10 + rune(lo) - 0xDC00)
					continue
				}
			}
			if u >= 0xD800 && u < 0xE000 {
				b.Write([]byte{0xE0 | byte(u>>12), 0x80 | byte(u>>6)&0x3F, 0x80 | byte(u)&0x3F})
			} else {
				b.WriteRune(rune(u))
			}
		default:
			p.pos -= 2
			return "", p.errorf("bad escape \\%c", esc)
		}
	}
}
