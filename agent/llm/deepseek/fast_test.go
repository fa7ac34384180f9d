package deepseek

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/fixtures"
	"github.com/stretchr/testify/require"
)

// fastSeeds are payloads the fast path must decode exactly as
// encoding/json does, or refuse.
func fastSeeds(t testing.TB) []string {
	seeds := []string{
		`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`,
		`{"id":"x","object":"chat.completion.chunk","created":1767225600,"model":"m","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"th\u00e9"},"logprobs":null,"finish_reason":null}],"usage":null}`,
		` { "choices" : [ { "delta" : { "content" : "a\"b\\c\n\t\u2028😀" } , "finish_reason" : "stop" } ] } `,
		`{"choices":[],"usage":null}`,
		`{"choices":[{"delta":{}},{"delta":{"content":"second"},"finish_reason":"length"}]}`,
		`{"choices":[{"delta":{"content":"dup"}}],"choices":[{"delta":{"content":"last"}}]}`,
		`{"choices":[{"delta":{"Content":"case"}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"bash","arguments":""}}]}}]}`,
		`{"choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
		`{"choices":[{"delta":{"content":5}}]}`,
		`{"choices":[null]}`,
		`{"choices":[{"delta":{"content":"x"}}],"extra":{"a":[1,2.5e-3,-0,true,false,null,{"b":"c"}]}}`,
		`{"choices":[{"delta":{"content":"x"}}]}trailing`,
		`{"choices":[{"delta":{"content":"unterminated}]}`,
		`{"choices":[{"delta":{"content":"bad \x01 control"}}]}`,
		`{"choices":[{"delta":{"content":"x"}}],"n":01}`,
		`{"choices":[{"delta":{"content":"x"}}],"n":1.}`,
		`{"choices":[{"delta":{"content":"\ud800"}}]}`,
		`{"choices":[{"delta":{"content":"x"},}]}`,
		`[1,2]`,
		``,
	}
	files, err := fs.Glob(fixtures.DeepSeek(), "*.sse")
	require.NoError(t, err)
	for _, f := range files {
		sc := bufio.NewScanner(bytes.NewReader(fixture(t, f)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if l, ok := strings.CutPrefix(sc.Text(), "data: "); ok && l != "[DONE]" {
				seeds = append(seeds, l)
			}
		}
	}
	return seeds
}

// checkFast asserts the fast path agrees with encoding/json whenever it
// accepts a payload.
func checkFast(t *testing.T, data []byte) {
	var fast payload
	if !fastPayload(data, &fast) {
		return
	}
	var slow payload
	require.NoError(t, json.Unmarshal(data, &slow), "the fast path accepted what encoding/json rejects: %q", data)
	require.Equal(t, slow, fast, "%q", data)
}

func TestFastPayloadAgreesWithEncodingJSON(t *testing.T) {
	accepted := 0
	for _, s := range fastSeeds(t) {
		checkFast(t, []byte(s))
		var p payload
		if fastPayload([]byte(s), &p) {
			accepted++
		}
	}
	require.Greater(t, accepted, 10, "the fast path handles the common payloads")
	var p payload
	require.True(t, fastPayload([]byte(`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`), &p))
	require.Equal(t, "hi", p.Choices[0].Delta.Content)
	require.False(t, fastPayload([]byte(`{"choices":[{"delta":{"tool_calls":[]}}]}`), &p), "tool calls take the full decoder")
}

func FuzzFastPayload(f *testing.F) {
	for _, s := range fastSeeds(f) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFast(t, data) })
}
