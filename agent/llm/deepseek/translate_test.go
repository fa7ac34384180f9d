package deepseek

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
)

// translateString runs translate over s and returns the chunk JSON lines
// and the error.
func translateString(t *testing.T, s string) ([]string, error) {
	t.Helper()
	var lines []string
	err := translate(context.Background(), iotest.HalfReader(strings.NewReader(s)), func(c llm.Chunk) bool {
		b, err := c.MarshalJSON()
		require.NoError(t, err)
		lines = append(lines, string(b))
		return true
	})
	return lines, err
}

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 3*sseBufferSize+17)
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"lf", "data: a\n\ndata: b\n\n", []string{"a", "b"}},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}},
		{"multi-line data", "data: a\ndata:b\ndata:  c\n\n", []string{"a\nb\n c"}},
		{"fields and comments", ": hi\nevent: message\nid: 7\nretry: 10\ndata: a\nfoo\n\n", []string{"a"}},
		{"no data events skipped", ": keep-alive\n\nevent: ping\n\ndata:\n\ndata: a\n\n", []string{"a"}},
		{"blank lines", "\n\n\n\ndata: a\n\n\n\n\n", []string{"a"}},
		{"long line", "data: " + long + "\n\n", []string{long}},
		{"field without colon", "data\ndata: a\n\n", []string{"\na"}},
		{"incomplete event dropped", "data: a\n\ndata: b\n", []string{"a"}},
		{"partial line dropped", "data: a\n\ndata: b", []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newSSEReader(iotest.OneByteReader(strings.NewReader(tc.in)))
			if tc.name == "long line" {
				r = newSSEReader(strings.NewReader(tc.in))
			}
			var got []string
			for {
				d, err := r.next()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				got = append(got, string(d))
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSSEReaderError(t *testing.T) {
	boom := errors.New("boom")
	r := newSSEReader(io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(boom)))
	d, err := r.next()
	require.NoError(t, err)
	require.Equal(t, "a", string(d))
	_, err = r.next()
	require.ErrorIs(t, err, boom)
	_, err = translateString(t, "")
	require.Equal(t, &llm.Error{Message: "SSE stream ended without [DONE]", Code: CodeStreamClosed}, err)
	err = translate(context.Background(), iotest.ErrReader(boom), func(llm.Chunk) bool { return true })
	require.ErrorIs(t, err, boom)
	require.Equal(t, "", llm.ErrorCode(err))
}

func TestTranslateOrderWithinPayload(t *testing.T) {
	in := `data: {"choices":[{"delta":{"tool_calls":[{"index":3,"id":"c3","function":{"name":"a","arguments":"{"}},` +
		`{"index":1,"function":{"arguments":"x"}}],"content":"T","reasoning_content":"R"},"finish_reason":null}],"usage":null}` + "\n\n" +
		`data: {"choices":[{"delta":{"tool_calls":[{"index":3,"function":{"arguments":"}"}},{"index":1,"id":"c1","function":{"name":"b"}}]}}]}` + "\n\n" +
		`data: {"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"name":"b2","arguments":"y"}}],"content":"U"},"finish_reason":"tool_calls"}]}` + "\n\n" +
		"data: [DONE]\n\ndata: ignored\n\n"
	lines, err := translateString(t, in)
	require.NoError(t, err)
	require.Equal(t, []string{
		`{"type":"block-start","index":0,"blockType":"reasoning"}`,
		`{"type":"reasoning-delta","index":0,"text":"R"}`,
		`{"type":"block-start","index":1,"blockType":"text"}`,
		`{"type":"text-delta","index":1,"text":"T"}`,
		`{"type":"block-start","index":2,"blockType":"tool-call"}`,
		`{"type":"tool-call-delta","index":2,"id":"c3","name":"a","argumentsDelta":"{"}`,
		`{"type":"block-start","index":3,"blockType":"tool-call"}`,
		`{"type":"tool-call-delta","index":3,"id":"","argumentsDelta":"x"}`,
		`{"type":"tool-call-delta","index":2,"id":"c3","name":"a","argumentsDelta":"}"}`,
		`{"type":"tool-call-delta","index":3,"id":"c1","name":"b","argumentsDelta":""}`,
		`{"type":"text-delta","index":1,"text":"U"}`,
		`{"type":"tool-call-delta","index":3,"id":"c1","name":"b2","argumentsDelta":"y"}`,
		`{"type":"block-end","index":0,"block":{"type":"reasoning","text":"R"}}`,
		`{"type":"block-end","index":1,"block":{"type":"text","text":"TU"}}`,
		`{"type":"block-end","index":2,"block":{"type":"tool-call","id":"c3","name":"a","arguments":"{}"}}`,
		`{"type":"block-end","index":3,"block":{"type":"tool-call","id":"c1","name":"b2","arguments":"xy"}}`,
		`{"type":"finish","reason":{"kind":"tool-calls"}}`,
	}, lines)
}

func TestTranslateToolCallWithoutIndex(t *testing.T) {
	in := `data: {"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"1"}},{"id":"b","function":{"name":"g","arguments":"2"}}]}}]}` + "\n\n" +
		"data: [DONE]\n\n"
	lines, err := translateString(t, in)
	require.NoError(t, err)
	require.Equal(t, `{"type":"block-end","index":1,"block":{"type":"tool-call","id":"b","name":"g","arguments":"2"}}`, lines[len(lines)-2])
}

func TestTranslateTolerance(t *testing.T) {
	// Values of unexpected types are skipped; the rest of the payload counts.
	in := `data: {"choices":[{"delta":{"content":5,"reasoning_content":"r"}}],"usage":{"prompt_tokens":"x","completion_tokens":2}}` + "\n\n" +
		`data: {"choices":"nope"}` + "\n\n" + `data: 42` + "\n\n" + `data: null` + "\n\n" +
		`data: {"choices":[{"delta":{"content":""}}],"usage":null}` + "\n\n" +
		"data: [DONE]\n\n"
	lines, err := translateString(t, in)
	require.NoError(t, err)
	require.Equal(t, []string{
		`{"type":"block-start","index":0,"blockType":"reasoning"}`,
		`{"type":"reasoning-delta","index":0,"text":"r"}`,
		`{"type":"block-end","index":0,"block":{"type":"reasoning","text":"r"}}`,
		`{"type":"usage","usage":{"inputTokens":0,"outputTokens":2}}`,
		`{"type":"finish","reason":{"kind":"stop"}}`,
	}, lines)
}

func TestTranslateEmptyStream(t *testing.T) {
	lines, err := translateString(t, ": keep-alive\n\ndata: [DONE]\n\n")
	require.NoError(t, err)
	require.Equal(t, []string{`{"type":"finish","reason":{"kind":"stop"}}`}, lines)
}

func TestTranslateMalformed(t *testing.T) {
	long := `{"choices":[` + strings.Repeat("é", 100) + strings.Repeat("😀", 20)
	cases := []struct{ data, quoted string }{
		{"{", "{"},
		{"not json", "not json"},
		{long, `{"choices":[` + strings.Repeat("é", 100) + strings.Repeat("😀", 4)},
		{strings.Repeat("a", 119) + "😀", strings.Repeat("a", 119)},
	}
	for _, tc := range cases {
		lines, err := translateString(t, "data: "+tc.data+"\n\ndata: [DONE]\n\n")
		require.Empty(t, lines)
		require.Equal(t, &llm.Error{Message: "malformed SSE payload: " + tc.quoted, Code: CodeMalformedResponse}, err)
	}
}

func TestTranslateStopEarly(t *testing.T) {
	in := `data: {"choices":[{"delta":{"reasoning_content":"a","content":"b"}}]}` + "\n\n" + "data: [DONE]\n\n"
	for stopAt := 1; stopAt <= 6; stopAt++ {
		n := 0
		err := translate(context.Background(), strings.NewReader(in), func(llm.Chunk) bool {
			n++
			return n < stopAt
		})
		require.NoError(t, err)
		require.Equal(t, stopAt, n)
	}
}

func TestMapUsage(t *testing.T) {
	n := func(v int) *int { return &v }
	cases := []struct {
		in   string
		want llm.Usage
	}{
		{`{"prompt_tokens":100,"completion_tokens":5}`, llm.Usage{InputTokens: 100, OutputTokens: 5}},
		{`{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":64},"prompt_cache_hit_tokens":32}`,
			llm.Usage{InputTokens: 36, OutputTokens: 5, CacheReadTokens: n(64)}},
		{`{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{},"prompt_cache_hit_tokens":32}`,
			llm.Usage{InputTokens: 68, OutputTokens: 5, CacheReadTokens: n(32)}},
		{`{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":0}}`,
			llm.Usage{InputTokens: 100, OutputTokens: 5, CacheReadTokens: n(0)}},
		{`{"prompt_tokens":10,"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":3}}`,
			llm.Usage{InputTokens: 10, OutputTokens: 5, ReasoningTokens: n(3)}},
		{`{"prompt_tokens":10,"completion_tokens":5,"completion_tokens_details":{}}`,
			llm.Usage{InputTokens: 10, OutputTokens: 5}},
	}
	for _, tc := range cases {
		lines, err := translateString(t, `data: {"choices":[],"usage":`+tc.in+"}\n\ndata: [DONE]\n\n")
		require.NoError(t, err)
		want := llm.Chunk{Type: llm.ChunkUsage, Usage: &tc.want}
		b, err := want.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, string(b), lines[0], tc.in)
	}
	// Last usage wins.
	lines, err := translateString(t, `data: {"usage":{"prompt_tokens":1,"completion_tokens":1}}`+"\n\n"+
		`data: {"usage":{"prompt_tokens":2,"completion_tokens":3}}`+"\n\n"+`data: {"usage":null}`+"\n\ndata: [DONE]\n\n")
	require.NoError(t, err)
	require.Equal(t, `{"type":"usage","usage":{"inputTokens":2,"outputTokens":3}}`, lines[0])
}

func TestMapFinish(t *testing.T) {
	cases := map[string]string{
		"":                             `{"kind":"stop"}`,
		"stop":                         `{"kind":"stop"}`,
		"tool_calls":                   `{"kind":"tool-calls"}`,
		"length":                       `{"kind":"max-tokens"}`,
		"content_filter":               `{"kind":"error","message":"model stopped: content_filter","code":"CONTENT_FILTER"}`,
		"insufficient_system_resource": `{"kind":"error","message":"model stopped: insufficient_system_resource","code":"INSUFFICIENT_SYSTEM_RESOURCE"}`,
	}
	for in, want := range cases {
		c := llm.Chunk{Type: llm.ChunkFinish, Reason: mapFinish(in)}
		b, err := c.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, `{"type":"finish","reason":`+want+`}`, string(b), in)
	}
}

// deltaStream builds an SSE stream of n deltas shaped like DeepSeek's:
// reasoning, then text, then a tool call split into fragments.
func deltaStream(n int) []byte {
	var buf bytes.Buffer
	head := `data: {"id":"5b0c2a3e-8f1d-4c6a-9e27-1d3f4b5a6c70","object":"chat.completion.chunk","created":1767225600,` +
		`"model":"deepseek-v4-flash","system_fingerprint":"fp_8a8f2c1d6e_prod0820_fp8_kvcache","choices":[{"index":0,"delta":`
	tail := `,"logprobs":null,"finish_reason":null}]}` + "\n\n"
	for i := range n {
		buf.WriteString(head)
		switch {
		case i < n/2:
			fmt.Fprintf(&buf, `{"content":null,"reasoning_content":" word%d"}`, i)
		case i < n*3/4:
			fmt.Fprintf(&buf, `{"content":" token%d","reasoning_content":null}`, i)
		case i == n*3/4:
			buf.WriteString(`{"tool_calls":[{"index":0,"id":"call_00_zv6gJBK64n6qd5FWnj4E3831","type":"function","function":{"name":"read","arguments":""}}]}`)
		default:
			fmt.Fprintf(&buf, `{"tool_calls":[{"index":0,"function":{"arguments":"a%d"}}]}`, i)
		}
		buf.WriteString(tail)
	}
	buf.WriteString(`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3245,` +
		`"completion_tokens":93,"total_tokens":3338,"prompt_tokens_details":{"cached_tokens":3200},` +
		`"completion_tokens_details":{"reasoning_tokens":7},"prompt_cache_hit_tokens":3200,"prompt_cache_miss_tokens":45}}` + "\n\n")
	buf.WriteString("data: [DONE]\n\n")
	return buf.Bytes()
}

// BenchmarkTranslate measures SSE parsing plus translation of a
// 10k-delta stream; ns/chunk is per emitted chunk.
func BenchmarkTranslate(b *testing.B) {
	stream := deltaStream(10_000)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	chunks := 0
	for b.Loop() {
		chunks = 0
		err := translate(context.Background(), bytes.NewReader(stream), func(llm.Chunk) bool {
			chunks++
			return true
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "ns/chunk")
}
