package acp

// Input bounds (docs/reliability.md "Input bounds"): an inbound line over
// Options.MaxLineBytes is discarded as it is read, a prompt over
// Options.MaxPromptBytes is refused, and what is accepted costs a bounded
// multiple of its size. Memory is measured with runtime.MemStats.TotalAlloc,
// everything the process allocated in between: an upper bound of the heap
// growth that does not depend on when the collector runs.

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allocated runs f and returns the bytes the process allocated meanwhile.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// promptLine is a session/prompt request line whose one text block holds
// n bytes ending in "<&> end".
func promptLine(id, sid string, n int) []byte {
	const tail = "<&> end"
	var b bytes.Buffer
	b.Grow(n + 256)
	b.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"`)
	b.WriteString(strings.Repeat("a", n-len(tail)))
	b.WriteString(tail + `"}]}}` + "\n")
	return b.Bytes()
}

// A 64 MiB line is answered -32600 (with its id) without being buffered:
// the server allocates about the 16 MiB limit, not the line; the
// connection keeps serving.
func TestOversizedLineIsDiscardedUnbuffered(t *testing.T) {
	h, fa := newFakeHarness(t, Options{})
	sid := h.NewSession("/w")
	line := promptLine("9", sid, 64<<20)
	h.Expect("9", "session/prompt")
	var resp []byte
	n := allocated(func() {
		h.SendRaw(line, 2*time.Minute)
		resp, _ = h.AwaitWithin("9", 2*time.Minute)
	})
	assert.Equal(t, `{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"Invalid Request: message too large: a line of `+
		strconv.Itoa(len(line)-1)+` bytes exceeds the 16 MiB limit (16777216 bytes); it was discarded"}}`, string(resp))
	t.Logf("a %d MiB line cost %.1f MiB of allocations (limit 16 MiB)", len(line)>>20, float64(n)/(1<<20))
	assert.Less(t, n, uint64(DefaultMaxLineBytes+DefaultMaxLineBytes/2), "memory must be bounded by the limit, not the line")
	assert.Empty(t, fa.Session(t, sid).Prompts())

	resp, _ = h.Roundtrip("10", "session/prompt", PromptParams(sid, "still here"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":10,"result":{"stopReason":"end_turn"}}`, string(resp))
}

// A prompt of exactly the 4 MiB limit reaches the agent intact, and the
// wire (framing, envelope, decoding, flattening) allocates at most about
// three times its size on the way.
func TestPromptAtLimitCostsAtMostThreeTimesItsSize(t *testing.T) {
	h, fa := newFakeHarness(t, Options{})
	fa.Discard = true // the fake agent keeps the text and logs nothing
	sid := h.NewSession("/w")
	size := DefaultMaxPromptBytes
	line := promptLine("7", sid, size)
	h.Expect("7", "session/prompt")
	var resp []byte
	n := allocated(func() {
		h.SendRaw(line, time.Minute)
		resp, _ = h.AwaitWithin("7", time.Minute)
	})
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}`, string(resp))
	ps := fa.Session(t, sid).Prompts()
	require.Len(t, ps, 1)
	assert.Equal(t, size, len(ps[0]))
	assert.True(t, strings.HasSuffix(ps[0], "aaa<&> end"))
	ratio := float64(n) / float64(size)
	t.Logf("a %d-byte prompt cost %.2f× its size in allocations on the wire", size, ratio)
	assert.LessOrEqual(t, ratio, 3.1)
}

func TestPromptOverLimitIsRefused(t *testing.T) {
	h, fa := newFakeHarness(t, Options{})
	sid := h.NewSession("/w")
	size := DefaultMaxPromptBytes + 1
	h.Expect("1", "session/prompt")
	h.SendRaw(promptLine("1", sid, size), time.Minute)
	resp, _ := h.AwaitWithin("1", time.Minute)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: prompt too large: 4194305 bytes of text exceed the 4 MiB limit (maxPromptBytes); send less text, or reference large content as a file"}}`, string(resp))

	// The limit is across blocks, resource links included.
	half := strings.Repeat("b", DefaultMaxPromptBytes/2)
	params := `{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"` + half + `"},{"type":"resource_link","name":"a.go","uri":"file:///a.go"},{"type":"text","text":"` + half + `"}]}`
	// 4 MiB of JSON takes a while under -race on a loaded machine: the
	// same minute as the first.
	h.Expect("2", "session/prompt")
	h.SendRaw([]byte(RequestLine("2", "session/prompt", params)+"\n"), time.Minute)
	resp, _ = h.AwaitWithin("2", time.Minute)
	f := ParseWireFrame(t, resp)
	require.NotNil(t, f.Error)
	assert.Equal(t, "Invalid params: prompt too large: 4194352 bytes of text exceed the 4 MiB limit (maxPromptBytes); send less text, or reference large content as a file", f.Error.Message)
	assert.Empty(t, fa.Session(t, sid).Prompts())

	resp, _ = h.Roundtrip("3", "session/prompt", PromptParams(sid, "small"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`, string(resp))
}

func TestBoundsAreConfigurable(t *testing.T) {
	h, fa := newFakeHarness(t, Options{MaxPromptBytes: 10, MaxLineBytes: 200})
	sid := h.NewSession("/w")
	resp, _ := h.Roundtrip("1", "session/prompt", PromptParams(sid, "hello world"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: prompt too large: 11 bytes of text exceed the 10 bytes limit (maxPromptBytes); send less text, or reference large content as a file"}}`, string(resp))
	resp, _ = h.Roundtrip("2", "session/prompt", PromptParams(sid, "0123456789"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`, string(resp))
	assert.Equal(t, []string{"0123456789"}, fa.Session(t, sid).Prompts())

	long := RequestLine("3", "authenticate", `{"pad":"`+strings.Repeat("x", 200)+`"}`)
	resp, _ = h.Roundtrip("3", "authenticate", `{"pad":"`+strings.Repeat("x", 200)+`"}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: message too large: a line of `+strconv.Itoa(len(long))+` bytes exceeds the 200 bytes limit (200 bytes); it was discarded"}}`, string(resp))
}

// An oversized response to one of our calls fails that call (instead of
// leaving it pending forever) and is not answered back to the client.
func TestOversizedResponseFailsTheCall(t *testing.T) {
	srv, fa := NewFakeServer(Options{MaxLineBytes: 1 << 10})
	h := StartHarness(t, srv)
	sid := h.NewSession("/w")
	fa.Hook = func(ctx2 context.Context, s *FakeSession, text string) {
		_, err := srv.requestPermission(ctx2, RequestPermissionRequest{SessionID: s.ID(), ToolCall: ToolCallRef{ToolCallID: "call_1"},
			Options: []PermissionOption{{OptionID: "allow-once", Name: "Allow once", Kind: "allow_once"}}})
		s.note("permission error: " + errText(err))
	}
	h.Send(RequestLine("1", "session/prompt", PromptParams(sid, "go")))
	var reqLine []byte
	for {
		l := h.Next()
		if bytes.Contains(l, []byte(`"method":"session/request_permission"`)) {
			reqLine = l
			break
		}
	}
	id := string(frameID(reqLine))
	big := `{"jsonrpc":"2.0","id":` + id + `,"result":{"outcome":{"outcome":"selected","optionId":"` + strings.Repeat("x", 2<<10) + `"}}}`
	h.SendRaw([]byte(big+"\n"), WaitFor)
	resp, before := h.Await("1")
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`, string(resp))
	for _, l := range before {
		assert.NotContains(t, string(l), `"error"`, "the oversized response is not answered to the client")
	}
	assert.Contains(t, fa.Session(t, sid).Journal(), "permission error: session/request_permission: the client answered with error -32600: Invalid Request: response message too large: a line of "+strconv.Itoa(len(big))+" bytes exceeds the 1 KiB limit (1024 bytes); it was discarded")
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func BenchmarkPromptLine4MiB(b *testing.B) {
	srv, fa := NewFakeServer(Options{})
	h := StartHarness(b, srv)
	fa.Discard = true
	h.NoValidate = true
	sid := h.NewSession("/w")
	line := promptLine("1", sid, DefaultMaxPromptBytes)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		h.SendRaw(line, time.Minute)
		h.AwaitWithin("1", time.Minute)
	}
}
