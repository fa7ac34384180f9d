// Package textenc decodes bytes into text the way JavaScript runtimes do,
// so tool output and normalized JSON match upstream byte for byte.
package textenc

import (
	"strings"
	"unicode/utf8"
)

// DecodeUTF8 decodes b like a WHATWG UTF-8 decoder (Node's Buffer#toString):
// every maximal ill-formed subpart becomes one U+FFFD.
func DecodeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			sb.WriteString(string(b[i : i+n]))
			i += n
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += illFormedLen(b[i:])
	}
	return sb.String()
}

// illFormedLen is the length of the maximal ill-formed subpart at the start
// of b (Unicode § 3.9, "U+FFFD substitution of maximal subparts").
func illFormedLen(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	return n
}
