package composition_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
)

// TestServerEndStopsItsProgramWorkers: the program worker a run_code call
// left warm in the server's pool exits when the server's input ends:
// nothing the server started outlives it.
func TestServerEndStopsItsProgramWorkers(t *testing.T) {
	p := newProvider()
	srv := serve(t, "default", openStore(t, t.TempDir()), t.TempDir(), p, nil, nil)
	sid := srv.newSession(t, t.TempDir()).SessionID
	srv.setConfig(t, sid, "tool-mode", "both")
	p.script("go", toolCall{"run_code", `{"code":"return 1 + 1"}`})
	stop, _ := srv.prompt(t, sid, "go")
	require.Equal(t, "end_turn", stop)
	require.NotEmpty(t, liveWorkers(t), "the run left a warm worker in the pool")
	srv.stop()
	require.Eventually(t, func() bool { return len(liveWorkers(t)) == 0 }, waitFor, 10*time.Millisecond,
		"workers outlived the server: %v", liveWorkers(t))
}

// liveWorkers are the pids of the live (not zombie) processes running the
// worker executable this test binary built.
func liveWorkers(t *testing.T) []int {
	t.Helper()
	exe := os.Getenv(jsworker.EnvPath)
	require.NotEmpty(t, exe, "workertest.Main names the worker")
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.HasPrefix(cmd, []byte(exe+"\x00")) && !bytes.Contains(cmd, []byte("\x00"+exe+"\x00")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}
