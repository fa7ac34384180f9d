//go:build linux

package main

import (
	"os"
	"reflect"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The readings of this test process itself: its text is mapped from its
// executable, the code running now is resident, and the accounting adds up.
func TestReadMemoryOfARunningGoProcess(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	l, err := readLayout(exe)
	require.NoError(t, err)
	require.NotEmpty(t, l.funcs, "functions from the pclntab")
	pkgs := map[string]bool{}
	for _, f := range l.funcs {
		pkgs[f.pkg] = true
	}
	assert.True(t, pkgs["runtime"])
	assert.True(t, pkgs["github.com/dsh-acp/dsh-acp/bench/memprobe"])

	r, err := readMemory(os.Getpid(), "now", l)
	require.NoError(t, err)
	assert.Positive(t, r.rollup["Rss"])
	assert.LessOrEqual(t, r.rollup["Anonymous"], r.rollup["Rss"])
	var text, sum int64
	for _, m := range r.maps {
		sum += m.fields["Rss"]
		if m.kind == kindText {
			text += m.fields["Rss"]
		}
	}
	assert.Positive(t, text, "the executable's text is mapped and resident")
	assert.InDelta(t, r.rollup["Rss"], sum, float64(r.rollup["Rss"])/20, "smaps adds up to smaps_rollup")

	pc := uint64(reflect.ValueOf(readMemory).Pointer())
	assert.Equal(t, 1, countResident(r.resides, l, pc, pc+1), "the code that just ran is resident")
	runtime.KeepAlive(r)

	var textSec section
	for _, s := range l.sections {
		if s.name == ".text" {
			textSec = s
		}
	}
	res := residentBytes(r.resides, l, textSec.addr, textSec.addr+textSec.size)
	assert.Positive(t, res)
	assert.LessOrEqual(t, res, int64(textSec.size))
}

func TestFieldParsesSmapsLines(t *testing.T) {
	k, v, ok := field("Pss_Anon:           1234 kB")
	assert.True(t, ok)
	assert.Equal(t, "Pss_Anon", k)
	assert.Equal(t, int64(1234*1024), v)
	_, _, ok = field("00400000-0116e000 r-xp 00000000 fe:00 123 /bin/x")
	assert.False(t, ok, "a mapping header is no field")
	_, _, ok = field("VmFlags: rd ex mr mw me")
	assert.False(t, ok)
}
