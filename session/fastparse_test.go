package session

import (
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// slowEvent is UnmarshalJSON without the fast path.
func slowEvent(b []byte) (Event, error) {
	var e Event
	err := e.unmarshalSlow(b)
	return e, err
}

var fastSeeds = []string{
	`{"type":"turn/start","seq":0,"time":1700000000000,"data":{"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}}}`,
	`{"type":"assistant/chunk","seq":5,"time":-3,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a \"b\" \\ é <x> &"}}}`,
	`{"type":"assistant/chunk","seq":6,"time":2,"data":{"turn":-0,"step":1,"chunk":{"type":"reasoning-delta","index":7,"text":"plain é <x> &"}}}`,
	`{"type":"assistant/chunk","seq":6,"time":2,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"` + "\xff" + `"}}}`,
	`{"type":"assistant/message","seq":9,"time":0,"data":{"content":[{"type":"text","text":"x"}],"usage":{"inputTokens":1.5e3}},"sourceEventSeqs":[5,6,7],"surfaceOp":"append"}`,
	`{"type":"tool/result","seq":12,"time":0,"data":{"callId":"c","isError":true,"meta":null},"surfaceOp":"append","sourceEventSeqs":[11]}`,
	`{"type":"user/message","seq":1,"time":0,"data":{},"sourceEventSeqs":[],"surfaceOp":"append"}`,
	`{"type":"x","seq":1,"time":0,"data":{"a":"\u003c"}}`,
	`{"type":"x","seq":01,"time":0,"data":{}}`,
	`{"type":"x","seq":1,"time":0,"data":{"a":[1,2,{"b":false}]} }`,
	`{"type":"x","seq":1,"time":0,"data":{"a":{}},"sourceEventSeqs":[2]`,
	`{"type":"x","seq":1,"time":0,"data":{"a":1,"sourceEventSeqs":[2]}`,
	`{"type":"x","seq":1,"time":0,"data":{"a":1},"surfaceOp":{"op":"replace"}}`,
	`{"type":"x","seq":1,"time":0,"data":{"a": 1}}`,
}

// FuzzEventFastPath: wherever the fast path reads a line, the general
// decoder reads the same event from it.
func FuzzEventFastPath(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := parseCanonical(b, false)
		if !ok {
			return
		}
		slow, err := slowEvent(b)
		require.NoError(t, err, "the fast path read a line the decoder refuses: %s", b)
		require.Equal(t, slow, fast, "%s", b)
		require.True(t, json.Valid(b))
		aliased, err := ParseLine(b)
		require.NoError(t, err)
		require.Equal(t, fast, aliased, "ParseLine reads what UnmarshalJSON does")
		requireSameDelta(t, fast)
	})
}

// requireSameDelta: the delta an event located at its parse is the one
// ChunkDeltaBytes reads from its data, also once the data is replaced.
func requireSameDelta(t *testing.T, e Event) {
	t.Helper()
	kind, text, ok := e.ChunkDeltaBytes()
	k, x, want := ChunkDeltaBytes(e.Data)
	require.Equal(t, want, ok)
	require.Equal(t, string(k), string(kind))
	require.Equal(t, string(x), string(text))
	e.Data = []byte(`{"turn":1,"step":1,"chunk":{"type":"finish","text":"x"}}`)
	_, _, ok = e.ChunkDeltaBytes()
	require.False(t, ok, "replaced data is read again")
}

func TestEventSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the size is checked on 64-bit platforms")
	}
	require.Equal(t, uintptr(136), unsafe.Sizeof(Event{}), "an event is no larger than before its delta's offsets (on 64-bit)")
}

func TestEventFastPathSeeds(t *testing.T) {
	taken := 0
	for _, s := range fastSeeds {
		fast, ok := parseCanonical([]byte(s), false)
		slow, err := slowEvent([]byte(s))
		if !ok {
			continue
		}
		taken++
		require.NoError(t, err, s)
		require.Equal(t, slow, fast, s)
		line, err := fast.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, s, string(line), "re-encodes byte for byte")
		requireSameDelta(t, fast)
	}
	require.Equal(t, 7, taken, "the canonical lines take the fast path, the rest do not")
}

// FuzzChunkDelta: where ChunkDelta reads a chunk, decoding it in full
// gives the same type and text.
func FuzzChunkDelta(f *testing.F) {
	f.Add([]byte(`{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"a b é <x>"}}`))
	f.Add([]byte(`{"turn":1,"step":2,"chunk":{"type":"reasoning-delta","index":3,"text":"q\"x"}}`))
	f.Add([]byte(`{"turn":1,"step":2,"chunk":{"type":"finish","reason":{"kind":"stop"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		kind, text, ok := ChunkDelta(b)
		if !ok {
			return
		}
		var c struct {
			Chunk struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"chunk"`
		}
		require.NoError(t, json.Unmarshal(b, &c), "%s", b)
		require.Equal(t, c.Chunk.Type, kind)
		require.Equal(t, c.Chunk.Text, text)
	})
}
