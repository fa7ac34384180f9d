package jsonx

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMarshalKeepsHTMLLiteral(t *testing.T) {
	b, err := Marshal(map[string]string{"a": "<b> & </b>"})
	require.NoError(t, err)
	require.Equal(t, `{"a":"<b> & </b>"}`, string(b))
}

func TestUnescapeHTMLRespectsEscapedBackslash(t *testing.T) {
	std, err := json.Marshal([]string{"<x>", `\u003c`, "a&b\u2028"})
	require.NoError(t, err)
	got := UnescapeHTML(std)
	require.Equal(t, `["<x>","\\u003c","a&b`+"\u2028"+`"]`, string(got))
	var back []string
	require.NoError(t, json.Unmarshal(got, &back))
	require.Equal(t, []string{"<x>", `\u003c`, "a&b\u2028"}, back)
}

func TestMarshalKeepsLineSeparatorsLiteral(t *testing.T) {
	b, err := Marshal("a\u2028b\u2029c")
	require.NoError(t, err)
	require.Equal(t, "\"a\u2028b\u2029c\"", string(b))
}

func TestAppendStringMatchesMarshal(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"uote\\", "<b>&</b>", "tab\tnl\ncr\r\x00\x1f", "é中文🎉", "\u2028\u2029", "bad\xffutf8"} {
		want, err := Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendString(nil, s)), "%q", s)
	}
}

func BenchmarkAppendString(b *testing.B) {
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = AppendString(buf[:0], "a typical streamed chunk of text, with \"quotes\"")
	}
}
