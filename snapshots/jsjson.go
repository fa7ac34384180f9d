package snapshots

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// JSKind is the kind of a JSValue.
type JSKind uint8

// The JSON value kinds.
const (
	JSNull JSKind = iota
	JSBool
	JSNumber
	JSString
	JSArray
	JSObject
)

// maxParseDepth bounds the nesting of parsed values (JS engines fail on
// very deep nesting too; this keeps the recursive parser safe).
const maxParseDepth = 10000

// JSValue is an order-preserving JSON value that behaves like the result of
// JavaScript's JSON.parse: numbers are float64, object members keep their
// insertion order except that canonical array-index keys ("0" …
// "4294967294") come first in ascending numeric order, and a repeated key
// keeps the position of its first occurrence with the value of its last.
//
// Strings are Go strings. A lone UTF-16 surrogate (only obtainable from a
// "\udxxx" escape) is held in its 3-byte generalized UTF-8 (WTF-8) form so
// that Stringify can reproduce JavaScript's "\udxxx" output.
//
// A JSValue is used through a pointer; the zero JSValue is null.
type JSValue struct {
	kind    JSKind
	boolean bool
	num     float64
	str     string
	items   []*JSValue
	members []jsMember
}

type jsMember struct {
	key   string
	value *JSValue
}

// NewJSNull returns a JSON null.
func NewJSNull() *JSValue { return &JSValue{kind: JSNull} }

// NewJSBool returns a JSON boolean.
func NewJSBool(b bool) *JSValue { return &JSValue{kind: JSBool, boolean: b} }

// NewJSNumber returns a JSON number.
func NewJSNumber(f float64) *JSValue { return &JSValue{kind: JSNumber, num: f} }

// NewJSString returns a JSON string.
func NewJSString(s string) *JSValue { return &JSValue{kind: JSString, str: s} }

// NewJSArray returns a JSON array holding items.
func NewJSArray(items ...*JSValue) *JSValue {
	return &JSValue{kind: JSArray, items: append([]*JSValue{}, items...)}
}

// NewJSObject returns an empty JSON object.
func NewJSObject() *JSValue { return &JSValue{kind: JSObject} }

// Kind reports the kind of v (JSNull for a nil v).
func (v *JSValue) Kind() JSKind {
	if v == nil {
		return JSNull
	}
	return v.kind
}

// IsNull reports whether v is null (or nil).
func (v *JSValue) IsNull() bool { return v.Kind() == JSNull }

// BoolValue returns v's boolean and whether v is a boolean.
func (v *JSValue) BoolValue() (bool, bool) {
	if v.Kind() != JSBool {
		return false, false
	}
	return v.boolean, true
}

// NumberValue returns v's number and whether v is a number.
func (v *JSValue) NumberValue() (float64, bool) {
	if v.Kind() != JSNumber {
		return 0, false
	}
	return v.num, true
}

// StringValue returns v's string and whether v is a string.
func (v *JSValue) StringValue() (string, bool) {
	if v.Kind() != JSString {
		return "", false
	}
	return v.str, true
}

// Items returns the elements of an array (nil for other kinds). The slice
// is v's own: assigning to its elements modifies v.
func (v *JSValue) Items() []*JSValue {
	if v.Kind() != JSArray {
		return nil
	}
	return v.items
}

// Append adds items at the end of an array; it panics if v is not an array.
func (v *JSValue) Append(items ...*JSValue) {
	if v.Kind() != JSArray {
		panic("snapshots: Append on a non-array JSValue")
	}
	v.items = append(v.items, items...)
}

// Keys returns the keys of an object in JavaScript enumeration order (nil
// for other kinds).
func (v *JSValue) Keys() []string {
	if v.Kind() != JSObject {
		return nil
	}
	keys := make([]string, len(v.members))
	for i, m := range v.members {
		keys[i] = m.key
	}
	return keys
}

// Get returns the value of an object member and whether it exists. It
// returns false for non-objects.
func (v *JSValue) Get(key string) (*JSValue, bool) {
	if i := v.memberIndex(key); i >= 0 {
		return v.members[i].value, true
	}
	return nil, false
}

// Has reports whether v is an object with a member key.
func (v *JSValue) Has(key string) bool { return v.memberIndex(key) >= 0 }

// Set assigns an object member like a JavaScript property assignment: an
// existing key keeps its position, a new array-index key is placed among the
// index keys in numeric order, any other new key is appended. It panics if v
// is not an object.
func (v *JSValue) Set(key string, val *JSValue) {
	if v.Kind() != JSObject {
		panic("snapshots: Set on a non-object JSValue")
	}
	if i := v.memberIndex(key); i >= 0 {
		v.members[i].value = val
		return
	}
	m := jsMember{key: key, value: val}
	idx, ok := arrayIndex(key)
	if !ok {
		v.members = append(v.members, m)
		return
	}
	pos := 0
	for pos < len(v.members) {
		other, isIdx := arrayIndex(v.members[pos].key)
		if !isIdx || other > idx {
			break
		}
		pos++
	}
	v.members = append(v.members, jsMember{})
	copy(v.members[pos+1:], v.members[pos:])
	v.members[pos] = m
}

// Delete removes an object member and reports whether it existed.
func (v *JSValue) Delete(key string) bool {
	i := v.memberIndex(key)
	if i < 0 {
		return false
	}
	v.members = append(v.members[:i], v.members[i+1:]...)
	return true
}

func (v *JSValue) memberIndex(key string) int {
	if v.Kind() != JSObject {
		return -1
	}
	for i, m := range v.members {
		if m.key == key {
			return i
		}
	}
	return -1
}

// MapStrings replaces, recursively and in place, every string value inside
// v (not object keys) by f of it.
func (v *JSValue) MapStrings(f func(string) string) {
	switch v.Kind() {
	case JSString:
		v.str = f(v.str)
	case JSArray:
		for _, it := range v.items {
			it.MapStrings(f)
		}
	case JSObject:
		for _, m := range v.members {
			m.value.MapStrings(f)
		}
	}
}

// arrayIndex reports whether key is a canonical array index ("0" …
// "4294967294") and returns its numeric value.
func arrayIndex(key string) (uint64, bool) {
	if len(key) == 0 || len(key) > 10 || (key[0] == '0' && len(key) > 1) {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, n <= 4294967294
}

// Stringify serializes v as JavaScript's JSON.stringify(v) does (no
// whitespace). Non-finite numbers become null, as in JavaScript.
func (v *JSValue) Stringify() []byte { return v.AppendJS(nil) }

// String returns the JavaScript serialization of v.
func (v *JSValue) String() string { return string(v.Stringify()) }

// AppendJS appends the JavaScript serialization of v to dst.
func (v *JSValue) AppendJS(dst []byte) []byte {
	switch v.Kind() {
	case JSBool:
		return strconv.AppendBool(dst, v.boolean)
	case JSNumber:
		return appendJSNumber(dst, v.num)
	case JSString:
		return appendJSString(dst, v.str)
	case JSArray:
		dst = append(dst, '[')
		for i, it := range v.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = it.AppendJS(dst)
		}
		return append(dst, ']')
	case JSObject:
		dst = append(dst, '{')
		for i, m := range v.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSString(dst, m.key)
			dst = append(dst, ':')
			dst = m.value.AppendJS(dst)
		}
		return append(dst, '}')
	default:
		return append(dst, "null"...)
	}
}

// appendJSNumber appends f in ECMAScript Number::toString form.
func appendJSNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f == 0 {
		return append(dst, '0') // also -0
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d[.ddd]e±XX
	ePos := bytes.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(string(e[ePos+1:]))
	digits := make([]byte, 0, ePos)
	for _, c := range e[:ePos] {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	k, n := len(digits), exp+1
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

const lowerHex = "0123456789abcdef"

// wtf8Surrogate decodes a generalized-UTF-8 surrogate at s[i:] (3 bytes).
func wtf8Surrogate(s string, i int) (rune, bool) {
	if i+2 < len(s) && s[i] == 0xED && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2] >= 0x80 && s[i+2] <= 0xBF {
		return 0xD000 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), true
	}
	return 0, false
}

// appendJSString appends s quoted as JavaScript's JSON.stringify does.
// Invalid UTF-8 other than WTF-8 surrogates is written as U+FFFD.
func appendJSString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\b':
				dst = append(dst, '\\', 'b')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\f':
				dst = append(dst, '\\', 'f')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xF])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || size > 1 {
			dst = append(dst, s[i:i+size]...)
			i += size
			continue
		}
		hi, ok := wtf8Surrogate(s, i)
		if !ok {
			dst = utf8.AppendRune(dst, utf8.RuneError)
			i++
			continue
		}
		if lo, ok := wtf8Surrogate(s, i+3); ok && hi < 0xDC00 && lo >= 0xDC00 {
			dst = utf8.AppendRune(dst, 0x10000+(hi-0xD800)<<10+lo-0xDC00)
			i += 6
			continue
		}
		dst = append(dst, '\\', 'u', lowerHex[hi>>12], lowerHex[hi>>8&0xF], lowerHex[hi>>4&0xF], lowerHex[hi&0xF])
		i += 3
	}
	return append(dst, '"')
}
