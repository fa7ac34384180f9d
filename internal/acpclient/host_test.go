package acpclient_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
)

// The filesystem is Zed's: reads see unsaved buffers first, then the disk
// (with line and limit); writes land in an open buffer or on the disk;
// missing files and paths outside the project are "Resource not found".
func TestFSOverlay(t *testing.T) {
	root := t.TempDir()
	disk := filepath.Join(root, "disk.txt")
	dirty := filepath.Join(root, "dirty.txt")
	require.NoError(t, os.WriteFile(disk, []byte("one\ntwo\nthree\n"), 0o644))
	require.NoError(t, os.WriteFile(dirty, []byte("saved\n"), 0o644))
	fsys := acpclient.NewFS(root)
	fsys.SetBuffer(dirty, "unsaved\n")
	c := connect(t, acpclient.Options{FS: fsys})
	sid := newSession(t, c)
	read := func(path string, extra ...any) step {
		p := map[string]any{"sessionId": sid, "path": path}
		for i := 0; i+1 < len(extra); i += 2 {
			p[extra[i].(string)] = extra[i+1]
		}
		return step{"fs/read_text_file", p}
	}
	write := func(path, content string) step {
		return step{"fs/write_text_file", map[string]any{"sessionId": sid, "path": path, "content": content}}
	}
	outside := filepath.Join(filepath.Dir(root), "elsewhere.txt")
	created := filepath.Join(root, "new", "dir", "made.txt")
	got := run(t, c, sid,
		read(dirty),
		read(disk, "line", 2, "limit", 1),
		read(filepath.Join(root, "missing.txt")),
		read(outside),
		write(dirty, "agent edit\n"),
		write(created, "fresh\n"),
		write(outside, "no"),
		read(dirty),
		read("relative.txt"),
	)
	uri := func(p string) string { b, _ := json.Marshal(p); return string(b) }
	assert.Equal(t, []string{
		`{"jsonrpc":"2.0","id":0,"result":{"content":"unsaved\n"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":"two\n"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"Resource not found","data":{"uri":` + uri(filepath.Join(root, "missing.txt")) + `}}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"Resource not found","data":{"uri":` + uri(outside) + `}}}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
		`{"jsonrpc":"2.0","id":5,"result":{}}`,
		`{"jsonrpc":"2.0","id":6,"error":{"code":-32002,"message":"Resource not found","data":{"uri":` + uri(outside) + `}}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"content":"agent edit\n"}}`,
		`{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"Invalid params: an absolute path is required"}}`,
	}, got)

	// What reached the disk and the buffers.
	b, err := os.ReadFile(dirty)
	require.NoError(t, err)
	assert.Equal(t, "saved\n", string(b), "the write went to the open buffer, not the disk")
	buf, ok := fsys.Buffer(dirty)
	assert.True(t, ok)
	assert.Equal(t, "agent edit\n", buf)
	b, err = os.ReadFile(created)
	require.NoError(t, err)
	assert.Equal(t, "fresh\n", string(b))
	assert.NoFileExists(t, outside)

	// The review list, in order, and every call.
	writes := fsys.Writes()
	require.Len(t, writes, 2)
	assert.Equal(t, acpclient.FSCall{Method: "fs/write_text_file", Path: dirty, Content: "agent edit\n", Buffer: true}, writes[0])
	assert.Equal(t, acpclient.FSCall{Method: "fs/write_text_file", Path: created, Content: "fresh\n"}, writes[1])
	var methods []string
	for _, call := range fsys.Calls() {
		methods = append(methods, strings.TrimPrefix(call.Method, "fs/")+" "+filepath.Base(call.Path))
	}
	assert.Equal(t, []string{"read_text_file dirty.txt", "read_text_file disk.txt", "read_text_file missing.txt",
		"read_text_file elsewhere.txt", "write_text_file dirty.txt", "write_text_file made.txt", "write_text_file elsewhere.txt",
		"read_text_file dirty.txt", "read_text_file ."}, methods)
	assert.Equal(t, 2, fsys.Calls()[1].Line)
	assert.Equal(t, 1, fsys.Calls()[1].Limit)
}

// Terminals really run their command: in its cwd with its env, output
// captured (its tail kept at the byte limit), exit code or signal name,
// kill and release; the calls are recorded in order.
func TestTerminalsRunKillAndRelease(t *testing.T) {
	terms := &acpclient.Terminals{Env: []string{"PATH=" + os.Getenv("PATH")}}
	c := connect(t, acpclient.Options{Terminals: terms})
	sid := newSession(t, c)
	dir := t.TempDir()
	req := func(method, id string) step {
		return step{method, map[string]any{"sessionId": sid, "terminalId": id}}
	}
	got := run(t, c, sid,
		step{"terminal/create", map[string]any{"sessionId": sid, "command": "sh",
			"args": []string{"-c", `printf '%s %s\n' "$GREETING" "$(pwd)"; echo oops >&2; exit 3`},
			"env":  []map[string]string{{"name": "GREETING", "value": "héllo"}}, "cwd": dir}},
		req("terminal/wait_for_exit", "term-1"),
		req("terminal/output", "term-1"),
	)
	// The second command is killed once its output is there.
	got = append(got, run(t, c, sid, step{"terminal/create", map[string]any{"sessionId": sid,
		"command": "printf 'aé%.0s' $(seq 10); sleep 30", "outputByteLimit": 8}})...)
	out, err := terms.Created()[1].WaitOutput(ctx(t), func(out string) bool { return out == "éaéaé" })
	require.NoError(t, err, out)
	got = append(got, run(t, c, sid,
		req("terminal/kill", "term-2"),
		req("terminal/wait_for_exit", "term-2"),
		req("terminal/output", "term-2"),
		req("terminal/release", "term-2"),
		req("terminal/output", "term-2"),
	)...)
	out1, _ := json.Marshal("héllo " + dir + "\noops\n")
	assert.Equal(t, []string{
		`{"jsonrpc":"2.0","id":0,"result":{"terminalId":"term-1"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"exitCode":3,"signal":null}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"exitStatus":{"exitCode":3,"signal":null},"output":` + string(out1) + `,"truncated":false}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"terminalId":"term-2"}}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
		`{"jsonrpc":"2.0","id":5,"result":{"exitCode":null,"signal":"SIGKILL"}}`,
		`{"jsonrpc":"2.0","id":6,"result":{"exitStatus":{"exitCode":null,"signal":"SIGKILL"},"output":"éaéaé","truncated":true}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"Invalid params: no terminal \"term-2\""}}`,
	}, got)

	created := terms.Created()
	require.Len(t, created, 2)
	assert.Equal(t, []string{"GREETING=héllo"}, created[0].Env)
	assert.Equal(t, dir, created[0].Cwd)
	assert.False(t, created[0].Killed())
	assert.True(t, created[1].Killed())
	assert.True(t, created[1].Released())
	assert.Equal(t, 8, created[1].ByteLimit)
	var calls []string
	for _, call := range terms.Calls() {
		calls = append(calls, call.Method+" "+call.TerminalID)
	}
	assert.Equal(t, []string{"terminal/create term-1", "terminal/wait_for_exit term-1", "terminal/output term-1",
		"terminal/create term-2", "terminal/kill term-2", "terminal/wait_for_exit term-2", "terminal/output term-2",
		"terminal/release term-2", "terminal/output term-2"}, calls)
}

// A command still running when the agent's output ends is killed.
func TestTerminalsDieWithTheConnection(t *testing.T) {
	terms := &acpclient.Terminals{}
	c := connect(t, acpclient.Options{Terminals: terms})
	sid := newSession(t, c)
	run(t, c, sid, step{"terminal/create", map[string]any{"sessionId": sid, "command": "sleep", "args": []string{"60"}}})
	require.NoError(t, c.CloseWrite())
	<-c.Done()
	tm := terms.Created()[0]
	select {
	case <-tm.Done():
	case <-ctx(t).Done():
		t.Fatal("the command outlived the connection")
	}
	assert.Equal(t, "SIGKILL", *tm.Exit().Signal)
}
