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
