package fs

import (
	"strings"
	"unicode/utf8"
)

// Text limits of the read window (tools contract § 4).
const (
	// DefaultLimit is read's default and maximum line count.
	DefaultLimit = 2000
	// MaxLineChars is the longest line read shows, in UTF-16 code units.
	MaxLineChars = 2000
	// MaxOutputBytes caps the UTF-8 size of the lines one read returns.
	MaxOutputBytes = 51200
	// binarySample is how many leading bytes read inspects for a NUL.
	binarySample = 8192
	// eolSample is how many leading UTF-16 units decide edit's line endings.
	eolSample = 4096
)

// truncationSuffix marks a line cut to MaxLineChars.
const truncationSuffix = "... (line truncated to 2000 chars)"

// bom is the UTF-8 byte-order mark a UTF-8 decoder drops.
const bom = "\xEF\xBB\xBF"

// hasBOM reports whether b starts with the byte-order mark.
func hasBOM(b []byte) bool { return len(b) >= len(bom) && string(b[:len(bom)]) == bom }

// decoded is a file's content as text.
type decoded struct {
	text string // without a leading byte-order mark
	bom  bool   // the raw bytes started with one
}

// decode validates raw as UTF-8 and drops a leading byte-order mark, as a
// fatal WHATWG UTF-8 decoder does.
func decode(raw []byte) (decoded, bool) {
	if !utf8.Valid(raw) {
		return decoded{}, false
	}
	if hasBOM(raw) {
		return decoded{text: string(raw[len(bom):]), bom: true}, true
	}
	return decoded{text: string(raw)}, true
}

// normalizeEOL replaces every CRLF by LF.
func normalizeEOL(s string) string {
	if !strings.Contains(s, "\r\n") {
		return s
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}

// toCRLF normalizes s to LF, then writes every line break as CRLF.
func toCRLF(s string) string { return strings.ReplaceAll(normalizeEOL(s), "\n", "\r\n") }

// prefersCRLF reports whether the first eolSample UTF-16 units of s hold
// more CRLF than bare LF line breaks.
func prefersCRLF(s string) bool {
	units, crlf, lf := 0, 0, 0
	for i := 0; i < len(s) && units < eolSample; {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == '\n' {
				if i > 0 && s[i-1] == '\r' {
					crlf++
				} else {
					lf++
				}
			}
			units++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		units += utf16Len(r)
		i += size
	}
	// A CRLF whose LF falls just past the sample counts as neither, as when
	// slicing the string; the loop above never looks past the sample, and
	// a final "\r" alone is not a line break.
	return crlf > lf
}

// utf16Len is the number of UTF-16 code units of r.
func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// unitsOf counts the UTF-16 code units of valid UTF-8 bytes b.
func unitsOf(b []byte) int {
	n := 0
	for _, c := range b {
		if c&0xC0 != 0x80 {
			n++
			if c >= 0xF0 {
				n++
			}
		}
	}
	return n
}

// cutUnits returns the longest prefix of valid UTF-8 b holding at most max
// UTF-16 units, and the units it holds. When max falls inside a surrogate
// pair, split reports it (JS would keep a lone high surrogate there).
func cutUnits(b []byte, max int) (prefix []byte, units int, split bool) {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		u := utf16Len(r)
		if units+u > max {
			return b[:i], units, units < max
		}
		units += u
		i += size
	}
	return b, units, false
}

// appendTruncated appends line (valid UTF-8) to dst, cut to MaxLineChars
// UTF-16 units plus the truncation suffix when it is longer. A surrogate
// pair cut in half leaves U+FFFD, which is what a lone surrogate becomes in
// UTF-8.
func appendTruncated(dst, line []byte, units int) []byte {
	if units <= MaxLineChars {
		return append(dst, line...)
	}
	prefix, _, split := cutUnits(line, MaxLineChars)
	dst = append(dst, prefix...)
	if split {
		dst = utf8.AppendRune(dst, utf8.RuneError)
	}
	return append(dst, truncationSuffix...)
}

// incompleteTail splits b into its longest prefix that does not end inside
// a multi-byte sequence, and the remaining 1–3 bytes of a sequence that may
// continue in the next chunk.
func incompleteTail(b []byte) (complete, tail []byte) {
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return b, nil
		}
		if c >= 0xC0 {
			need := 2
			switch {
			case c >= 0xF0:
				need = 4
			case c >= 0xE0:
				need = 3
			}
			if need > i {
				return b[:len(b)-i], b[len(b)-i:]
			}
			return b, nil
		}
	}
	return b, nil
}
