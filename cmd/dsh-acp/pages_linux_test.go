//go:build linux

package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadOnlyMappingsAreTheExecutablesPrivateReadOnlyOnes(t *testing.T) {
	maps := `00400000-0116e000 r-xp 00000000 fe:00 1234 /opt/dsh acp/dsh-acp
0116e000-01e5e000 r--p 00d6e000 fe:00 1234 /opt/dsh acp/dsh-acp
01e5e000-020e5000 rw-p 01a5e000 fe:00 1234 /opt/dsh acp/dsh-acp
020e5000-04133000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r-xs 00000000 fe:00 99 /opt/dsh acp/dsh-acp
7f0000002000-7f0000003000 r-xp 00000000 fe:00 98 /usr/lib/other.so
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
`
	got := readOnlyMappings([]byte(maps), "/opt/dsh acp/dsh-acp")
	assert.Equal(t, []span{{0x400000, 0x116e000, true}, {0x116e000, 0x1e5e000, false}}, got,
		"text and rodata of that path: not its data, not a shared mapping, not other files")
}

// textRSS is the resident size of this process's executable text mapping,
// from /proc/self/smaps.
func textRSS(t *testing.T) int64 {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	b, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.Contains(f[0], "-") {
			in = strings.Join(f[5:], " ") == exe && strings.HasPrefix(f[1], "r-x")
			continue
		}
		if in && len(f) == 3 && f[0] == "Rss:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no text mapping of", exe)
	return 0
}

// The release really leaves the text mapping: what stays resident is what
// ran since, and the process goes on running.
func TestReleaseStartupPagesUnmapsTheText(t *testing.T) {
	if traced() {
		t.Skip("under a debugger the release is skipped")
	}
	before := textRSS(t)
	require.NoError(t, releaseStartupPages())
	after := textRSS(t)
	t.Logf("text RSS %d KiB → %d KiB", before>>10, after>>10)
	assert.Less(t, after, before*3/4, "the text the initializers touched left the resident set")
	assert.Positive(t, after, "the code running now came back")
}
