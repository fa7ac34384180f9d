package deepseek

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// fastPayload decodes the common shape of a streamed payload (text and
// reasoning deltas, finish reasons, a null usage) without reflection. It
// accepts only well-formed JSON and returns false for anything else it does
// not handle exactly like encoding/json would (tool calls, a usage object,
// unexpected types, keys differing only in case, invalid UTF-8), leaving
// those payloads to json.Unmarshal.
func fastPayload(data []byte, p *payload) bool {
	s := scanner{b: data}
	seen := false
	ok := s.object(func(key string) bool {
		switch key {
		case "choices":
			if seen {
				return false // encoding/json merges repeated keys into the old elements
			}
			seen = true
			p.Choices = make([]choice, 0, 1)
			return s.array(func() bool {
				var c choice
				seenDelta := false
				if !s.object(func(key string) bool {
					switch key {
					case "delta":
						if seenDelta {
							return false
						}
						seenDelta = true
						return s.object(func(key string) bool {
							switch key {
							case "content":
								return s.stringOrNull(&c.Delta.Content)
							case "reasoning_content":
								return s.stringOrNull(&c.Delta.ReasoningContent)
							case "tool_calls":
								return false
							}
							return s.plainKey(key, "content", "reasoning_content", "tool_calls") && s.skip()
						})
					case "finish_reason":
						return s.stringOrNull(&c.FinishReason)
					}
					return s.plainKey(key, "delta", "finish_reason") && s.skip()
				}) {
					return false
				}
				p.Choices = append(p.Choices, c)
				return true
			})
		case "usage":
			return s.null()
		}
		return s.plainKey(key, "choices", "usage") && s.skip()
	})
	if !ok {
		*p = payload{}
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

// scanner walks one JSON text strictly.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// plainKey rejects a key that encoding/json would match to a known field
// case-insensitively.
func (s *scanner) plainKey(key string, known ...string) bool {
	for _, k := range known {
		if strings.EqualFold(key, k) {
			return false
		}
	}
	return true
}

// object calls member for each key, positioned at its value.
func (s *scanner) object(member func(key string) bool) bool {
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	for {
		var key string
		if s.peek() != '"' || !s.str(&key) || !s.eat(':') || !member(key) {
			return false
		}
		if s.eat('}') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

// array calls elem for each element.
func (s *scanner) array(elem func() bool) bool {
	if !s.eat('[') {
		return false
	}
	if s.eat(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.eat(']') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

func (s *scanner) literal(word string) bool {
	s.ws()
	if strings.HasPrefix(string(s.b[s.i:min(len(s.b), s.i+len(word))]), word) && len(s.b)-s.i >= len(word) {
		s.i += len(word)
		return true
	}
	return false
}

func (s *scanner) null() bool { return s.literal("null") }

// stringOrNull reads a string into dst; null leaves dst unchanged, as
// encoding/json does.
func (s *scanner) stringOrNull(dst *string) bool {
	switch s.peek() {
	case '"':
		return s.str(dst)
	case 'n':
		return s.null()
	}
	return false
}

// str reads a string; escapes are decoded by encoding/json.
func (s *scanner) str(dst *string) bool {
	if !s.eat('"') {
		return false
	}
	start := s.i
	escaped := false
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			if !escaped {
				if !utf8.Valid(raw) {
					return false
				}
				*dst = string(raw)
				return true
			}
			return json.Unmarshal(s.b[start-1:s.i], dst) == nil
		case c == '\\':
			escaped = true
			s.i += 2
		case c < 0x20:
			return false
		default:
			s.i++
		}
	}
	return false
}

// skip passes over any value.
func (s *scanner) skip() bool {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func(string) bool { return s.skip() })
	case c == '[':
		return s.array(s.skip)
	case c == '"':
		var ignored string
		return s.str(&ignored)
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.null()
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return false
}

// number passes over a number in JSON's grammar.
func (s *scanner) number() bool {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case digits() == 0:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
