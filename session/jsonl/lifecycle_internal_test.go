package jsonl

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLastTimeReadsTheLastCompleteEvent(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	header := `{"type":"session","version":0,"id":"x","createdAt":5}` + "\n"
	ev := func(seq, time int) string {
		return `{"type":"turn/start","seq":` + itoa(seq) + `,"time":` + itoa(time) + `,"data":{}}` + "\n"
	}
	require.Equal(t, int64(5), lastTime(write("empty.jsonl", header), 5), "no events: the creation time")
	require.Equal(t, int64(20), lastTime(write("two.jsonl", header+ev(0, 10)+ev(1, 20)), 5))
	require.Equal(t, int64(10), lastTime(write("torn.jsonl", header+ev(0, 10)+`{"type":"turn/end","seq":1,"ti`), 5), "a torn tail is skipped")
	big := header + strings.Repeat(ev(0, 1), 3000) + ev(3000, 77)
	require.Greater(t, len(big), tailBytes)
	require.Equal(t, int64(77), lastTime(write("big.jsonl", big), 5), "only the tail is read")
	require.Equal(t, int64(5), lastTime(filepath.Join(dir, "missing.jsonl"), 5))
	long := `{"type":"request/header","seq":1,"time":88,"data":{"x":"` + strings.Repeat("y", 10<<10) + `"}}` + "\n"
	require.Equal(t, int64(88), lastTime(write("long.jsonl", header+ev(0, 1)+long), 5), "a last event longer than the first tail read")
}

func itoa(n int) string { return strconv.Itoa(n) }
