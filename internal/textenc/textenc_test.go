package textenc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeUTF8(t *testing.T) {
	require.Equal(t, "héllo", DecodeUTF8([]byte("héllo")))
	// A truncated three-byte sequence is one maximal subpart.
	require.Equal(t, "a\uFFFDb", DecodeUTF8([]byte{'a', 0xE2, 0x82, 'b'}))
	// Lone continuation bytes are one U+FFFD each.
	require.Equal(t, "\uFFFD\uFFFDx", DecodeUTF8([]byte{0x80, 0x80, 'x'}))
	// Surrogates (ED A0..) are ill-formed after the lead byte.
	require.Equal(t, "\uFFFD\uFFFD\uFFFD", DecodeUTF8([]byte{0xED, 0xA0, 0x80}))
	require.Equal(t, "\uFFFD", DecodeUTF8([]byte{0xF0, 0x9F, 0x98}))
	require.Equal(t, "\uFFFD", DecodeUTF8([]byte("\uFFFD")))
}
