package composition_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/proctree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// running reports whether a process whose command line contains marker
// runs (visible in /proc even inside the sandbox's PID namespace).
func running(marker string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && strings.Contains(string(b), marker) {
			return true
		}
	}
	return false
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		raw, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(string(raw))
		return err == nil
	}, waitFor, 10*time.Millisecond)
	return pid
}

// session/close in the middle of a turn: the prompt answers cancelled
// first, then close answers; the session's background task and MCP server
// stop; the bridge forgets it; resume brings it back (and reconnects its
// MCP server) without replaying it. Every frame is schema-checked.
func TestSessionCloseStopsItsWorkAndResumeReconnects(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	root, ws := t.TempDir(), t.TempDir()
	pidfile := filepath.Join(t.TempDir(), "pid")
	servers := []map[string]any{{"name": "local", "command": self, "args": []string{},
		"env": []map[string]string{{"name": "DSH_MCP_TEST_SERVER", "value": "serve"}, {"name": "DSH_MCP_TEST_PIDFILE", "value": pidfile}}}}
	p := newProvider()
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, nil)
	sid := decodeResult(t, srv.c.call("session/new", map[string]any{"cwd": ws, "mcpServers": servers})).SessionID
	mcpPid := readPid(t, pidfile)

	// The sleep's length is unique to this run: another run of this test
	// (a concurrent `go test`, or -count) has its own task.
	marker := fmt.Sprintf("31.%d%09d", os.Getpid(), time.Now().UnixNano()%1e9)
	args, _ := json.Marshal(map[string]any{"command": "sleep " + marker, "description": "a long task", "run_in_background": true})
	p.script("start it", toolCall{Name: "bash", Args: string(args)})
	stop, _ := srv.prompt(t, sid, "start it")
	require.Equal(t, "end_turn", stop)
	require.Eventually(t, func() bool { return running(marker) }, waitFor, 10*time.Millisecond, "the background task runs")

	p.script("hold me", toolCall{Name: "bash", Args: `{"command":"true","description":"never runs"}`})
	g := p.hold("hold me")
	mark := srv.c.mark()
	_, promptCh := srv.c.request("session/prompt", promptParams(sid, "hold me"))
	g.waitReached(t)
	_, closeCh := srv.c.request("session/close", map[string]any{"sessionId": sid})
	closed := srv.c.await(closeCh, "session/close")
	require.Empty(t, string(closed.Error))
	assert.JSONEq(t, `{}`, string(closed.Result))
	pr := srv.c.await(promptCh, "session/prompt")
	assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(pr.Result))
	var order []string
	for _, l := range srv.c.since(mark) {
		if strings.Contains(l, `"result":{"stopReason":"cancelled"}`) {
			order = append(order, "prompt")
		}
		if strings.Contains(l, `"result":{}`) {
			order = append(order, "close")
		}
	}
	assert.Equal(t, []string{"prompt", "close"}, order, "the cancelled prompt answers before close does")

	assert.False(t, running(marker), "the session's background task stopped with it")
	assert.False(t, proctree.Running(mcpPid), "the session's MCP server stopped with it")
	_, ch := srv.c.request("session/prompt", promptParams(sid, "still there?"))
	f := srv.c.await(ch, "prompt after close")
	assert.Contains(t, string(f.Error), "unknown session: "+sid)
	evs := readLog(t, root, sid)
	assert.Contains(t, ofType(evs, "turn/end")[len(ofType(evs, "turn/end"))-1], `{"kind":"aborted","reason":"session/close"}`, "the turn ends aborted by the close")

	require.NoError(t, os.Remove(pidfile))
	mark = srv.c.mark()
	res := srv.c.call("session/resume", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": servers})
	assert.NotContains(t, string(res), "sessionId")
	for _, u := range updates(srv.c.since(mark), sid) {
		assert.NotContains(t, u, "user_message_chunk", "resume replays nothing")
		assert.NotContains(t, u, "tool_call", "resume replays nothing")
	}
	newPid := readPid(t, pidfile)
	assert.NotEqual(t, mcpPid, newPid, "the resumed session reconnects its MCP server")
	stop, _ = srv.prompt(t, sid, "back again")
	require.Equal(t, "end_turn", stop)
}

// The first prompt names the session at once (session_info_update with its
// first line); later prompts do not rename it, and a loaded session keeps
// its name.
func TestFirstPromptTitlesTheSession(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	srv := serve(t, "default", openStore(t, root), ws, newProvider(), map[string]any{}, nil)
	sid := srv.newSession(t, ws).SessionID
	titles := func(lines []string) []string {
		var out []string
		for _, u := range updates(lines, sid) {
			if strings.Contains(u, `"sessionUpdate":"session_info_update"`) {
				out = append(out, u)
			}
		}
		return out
	}
	_, lines := srv.prompt(t, sid, "  Fix the flaky login test\nIt fails one run in ten.")
	assert.Equal(t, []string{`{"sessionUpdate":"session_info_update","title":"Fix the flaky login test"}`}, titles(lines))
	_, lines = srv.prompt(t, sid, "and another thing")
	assert.Empty(t, titles(lines))
	srv.c.call("session/close", map[string]any{"sessionId": sid})
	srv.loadSession(t, sid, ws)
	_, lines = srv.prompt(t, sid, "after load")
	assert.Empty(t, titles(lines), "a loaded session keeps its title")
}
