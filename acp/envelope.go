package acp

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// envelope holds the top-level members of one inbound JSON-RPC message as
// raw spans of its line (nil when absent; the last of duplicate keys wins,
// as in encoding/json). Keeping spans instead of copies means a prompt's
// params are never copied before the handler decodes them.
type envelope struct {
	jsonrpc, id, method, params, result, error []byte
	// cut is the key whose value a truncated b ends inside ("" if none).
	cut string
}

// scanEnvelope reads the members of the JSON object at the start of b
// without allocating (unless a key is escaped) and without recursion. It
// tolerates a truncated b, such as the head of an oversized line: complete
// is false then, and env holds the members read in full. ok is false when
// b does not start with an object or is malformed before it ends. For a
// line json.Valid accepts that is an object, ok and complete are true.
func scanEnvelope(b []byte) (env envelope, complete, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return env, false, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return env, true, true
	}
	for {
		if i >= len(b) {
			return env, false, true
		}
		if b[i] != '"' {
			return env, false, false
		}
		kend := skipString(b, i)
		if kend < 0 {
			return env, false, true
		}
		key := b[i+1 : kend-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(b[i:kend], &k) != nil {
				return env, false, false
			}
			key = []byte(k)
		}
		i = skipSpace(b, kend)
		if i >= len(b) {
			return env, false, true
		}
		if b[i] != ':' {
			return env, false, false
		}
		i = skipSpace(b, i+1)
		vend := skipValue(b, i)
		switch {
		case vend == -1:
			env.cut = string(key)
			return env, false, true
		case vend < 0:
			return env, false, false
		}
		v := b[i:vend]
		switch string(key) {
		case "jsonrpc":
			env.jsonrpc = v
		case "id":
			env.id = v
		case "method":
			env.method = v
		case "params":
			env.params = v
		case "result":
			env.result = v
		case "error":
			env.error = v
		}
		i = skipSpace(b, vend)
		if i >= len(b) {
			return env, false, true
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return env, true, true
		default:
			return env, false, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i]
// (b[i] == '"'), or -1 when b ends inside it.
func skipString(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// skipValue returns the index just past the JSON value starting at b[i]:
// -1 when b ends inside it, -2 when it is malformed. Nesting is counted,
// not recursed into, so depth costs nothing.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := skipString(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	case '}', ']', ',', ':':
		return -2
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return -1
}

// validID reports whether raw (a valid JSON value) is an id the ACP schema
// allows (RequestId): a string, null, or an integer — a number whose value
// has no fractional part, whatever its spelling or size (`1e3`, `-0`,
// 18446744073709551616). It is echoed byte for byte.
func validID(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return true
	case c == 'n':
		return string(raw) == "null"
	case c == '-' || c >= '0' && c <= '9':
		return integral(raw)
	}
	return false
}

// integral reports whether the JSON number literal n has an integer value.
func integral(n []byte) bool {
	s := string(n)
	if s[0] == '-' {
		s = s[1:]
	}
	mant, exp := s, 0
	if k := strings.IndexAny(s, "eE"); k >= 0 {
		mant = s[:k]
		e, err := strconv.Atoi(s[k+1:])
		if err != nil {
			// An exponent beyond int: huge means integral, tiny means a
			// fraction unless the value is zero.
			if len(s) > k+1 && s[k+1] == '-' {
				return allZero(mant)
			}
			return true
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	point := len(intPart) + exp // digits before the decimal point
	switch {
	case point >= len(digits):
		return true
	case point <= 0:
		return allZero(digits)
	}
	return allZero(digits[point:])
}

func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
