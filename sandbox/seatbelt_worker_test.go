package sandbox

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
)

// TestSeatbeltWorkerProfile checks the program worker's profile: deny by
// default, its executable (by its canonical path and the link it is
// started by, as parameters, never as profile text) and the directories
// above them the only paths it names, no rule
// that allows a write or the network, and the denials last, where
// Seatbelt's last matching rule makes them win over system.sb.
func TestSeatbeltWorkerProfile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the profile's macOS paths are cleaned with the host's separator, which on Windows is not /")
	}
	s := fakeMac()
	plain := s.WrapWorker([]string{"/Users/me/.local/share/zed/agents/dsh-acp/dsh-acp-worker", "-mem", "268435456"})
	hostile := s.WrapWorker([]string{`/Users/me/x")) (allow file-write* (subpath "/`, "-mem", "0"})
	linked := s.WrapWorker([]string{"/tmp/build/dsh-acp-worker"})

	require.Equal(t, SeatbeltPath, plain[0])
	profile := plain[indexOf(plain, "-p")+1]
	assert.NotContains(t, profile, "/Users", "paths travel as parameters")
	assert.NotContains(t, hostile[indexOf(hostile, "-p")+1], "/Users", "paths travel as parameters")
	assert.True(t, strings.HasPrefix(profile, "(version 1)\n(deny default)\n"), profile)
	for _, allow := range []string{"(allow default", "(allow file-write", "(allow network", "(allow process-fork", "(allow file-read* (subpath \"/\"))"} {
		assert.NotContains(t, profile, allow)
	}
	lines := strings.Split(strings.TrimSpace(profile), "\n")
	assert.Equal(t, []string{"(deny file-write*)", "(deny network*)", "(deny process-fork)"}, lines[len(lines)-3:], "the denials come last")

	assert.Equal(t, []string{"--", "/Users/me/.local/share/zed/agents/dsh-acp/dsh-acp-worker", "-mem", "268435456"}, plain[len(plain)-4:])
	assert.Contains(t, plain, "WORKER_DIR_0=/")
	assert.Contains(t, plain, "WORKER_DIR_7=/Users/me/.local/share/zed/agents/dsh-acp")
	assert.Equal(t, "/tmp/build/dsh-acp-worker", linked[len(linked)-1], "the executable keeps the name it was given")
	assert.Contains(t, linked, "WORKER_EXE_0=/private/tmp/build/dsh-acp-worker", "allowed by its canonical path")
	assert.Contains(t, linked, "WORKER_EXE_1=/tmp/build/dsh-acp-worker", "and by the link it is started by")
	assert.Contains(t, linked, "WORKER_DIR_1=/private")
	assert.Contains(t, linked, "WORKER_DIR_4=/tmp")
	assert.NotContains(t, plain, "WORKER_EXE_1", "no second name without a link")

	golden.Assert(t, render(t, plain, hostile, linked), "seatbelt/worker.golden")
}
