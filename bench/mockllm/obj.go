package mockllm

import (
	"encoding/json"
	"strconv"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// raw is pre-encoded JSON for obj.
type raw []byte

// obj encodes key/value pairs as a JSON object in the given order. Values
// may be string, int, uint64, bool, nil, raw, or anything encoding/json
// handles.
func obj(pairs ...any) raw {
	return appendObj(nil, pairs...)
}

func appendObj(b []byte, pairs ...any) []byte {
	b = append(b, '{')
	for i := 0; i+1 < len(pairs); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonx.AppendString(b, pairs[i].(string)), ':')
		b = appendValue(b, pairs[i+1])
	}
	return append(b, '}')
}

func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return jsonx.AppendString(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case uint64:
		return strconv.AppendUint(b, v, 10)
	case bool:
		return strconv.AppendBool(b, v)
	case raw:
		return append(b, v...)
	case []raw:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, e...)
		}
		return append(b, ']')
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, enc...)
}

// arr encodes values as a JSON array.
func arr(vs ...raw) raw { return appendValue(nil, vs) }
