package structured

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// kind is a JSON value's kind.
type kind uint8

// JSON kinds.
const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// node is a parsed JSON value that keeps object key order (schemas and
// values are checked, and violations named, in the order given).
type node struct {
	kind    kind
	boolean bool
	num     float64
	raw     string // a number's literal
	str     string
	items   []*node
	keys    []string
	vals    []*node
}

// get returns an object member.
func (n *node) get(key string) (*node, bool) {
	for i, k := range n.keys {
		if k == key {
			return n.vals[i], true
		}
	}
	return nil, false
}

// scalar reports whether n is not an array or object.
func (n *node) scalar() bool { return n.kind != kArray && n.kind != kObject }

// equal compares two values structurally.
func (n *node) equal(o *node) bool {
	if n.kind != o.kind {
		return false
	}
	switch n.kind {
	case kNull:
		return true
	case kBool:
		return n.boolean == o.boolean
	case kNumber:
		return n.num == o.num
	case kString:
		return n.str == o.str
	case kArray:
		if len(n.items) != len(o.items) {
			return false
		}
		for i := range n.items {
			if !n.items[i].equal(o.items[i]) {
				return false
			}
		}
		return true
	}
	if len(n.keys) != len(o.keys) {
		return false
	}
	for i, k := range n.keys {
		ov, ok := o.get(k)
		if !ok || !n.vals[i].equal(ov) {
			return false
		}
	}
	return true
}

// json re-encodes n (keys in order, numbers as given).
func (n *node) json() string {
	var b bytes.Buffer
	n.write(&b)
	return b.String()
}

func (n *node) write(b *bytes.Buffer) {
	switch n.kind {
	case kNull:
		b.WriteString("null")
	case kBool:
		b.WriteString(strconv.FormatBool(n.boolean))
	case kNumber:
		b.WriteString(n.raw)
	case kString:
		b.Write(jsonx.MustMarshal(n.str))
	case kArray:
		b.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			it.write(b)
		}
		b.WriteByte(']')
	case kObject:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(jsonx.MustMarshal(k))
			b.WriteByte(':')
			n.vals[i].write(b)
		}
		b.WriteByte('}')
	}
}

// parse decodes one JSON value keeping key order.
func parse(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return n, nil
}

func parseValue(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: kNull}, nil
	case bool:
		return &node{kind: kBool, boolean: t}, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, err
		}
		return &node{kind: kNumber, num: f, raw: string(t)}, nil
	case string:
		return &node{kind: kString, str: t}, nil
	case json.Delim:
		switch t {
		case '[':
			n := &node{kind: kArray, items: []*node{}}
			for dec.More() {
				it, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, it)
			}
			_, err := dec.Token()
			return n, err
		case '{':
			n := &node{kind: kObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k)
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token()
			return n, err
		}
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// finite reports whether a number is finite (always, for parsed JSON,
// unless it overflowed).
func (n *node) finite() bool { return !math.IsInf(n.num, 0) && !math.IsNaN(n.num) }
