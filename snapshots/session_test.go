package snapshots

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm/replay"
	"github.com/dsh-acp/dsh-acp/composition"
	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/acpschema"
	"github.com/dsh-acp/dsh-acp/internal/testbin"
	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
	"github.com/dsh-acp/dsh-acp/session/sqlite"
)

// serveInProcess starts one server over pipes with the given store and
// returns a client for it and a function that closes stdin and waits.
func serveInProcess(t *testing.T, store session.Store, modelLog string) (*acpclient.Conn, func()) {
	t.Helper()
	comp, ok := composition.Builtin("acp-agent")
	require.True(t, ok)
	provider, err := replay.New(modelLog, "", nil)
	require.NoError(t, err)
	srv := comp.NewServer(composition.ServerOptions{Provider: provider, Store: store, Log: zerolog.Nop(), Version: "test"})
	c := acpclient.Serve(srv.Serve, acpclient.Options{Schema: stableSchema(t)})
	return c, func() {
		_ = c.CloseWrite()
		select {
		case <-c.Stopped():
		case <-time.After(10 * time.Second):
			t.Fatal("server did not stop after stdin closed")
		}
		c.Report(t)
	}
}

// stableSchema is the stable ACP schema the clients validate frames with.
func stableSchema(t *testing.T) acpclient.FrameChecker {
	t.Helper()
	v, err := acpschema.Stable()
	require.NoError(t, err)
	return v
}

// call sends a request and waits (10 s at most) for its response.
func call(t *testing.T, c *acpclient.Conn, method string, params any) acpclient.Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k, err := c.Start(method, params)
	require.NoError(t, err)
	f, err := k.Wait(ctx)
	require.NoError(t, err)
	return f
}

func callOK(t *testing.T, c *acpclient.Conn, method string, params any) json.RawMessage {
	t.Helper()
	f := call(t, c, method, params)
	require.Nil(t, f.Error, "%s: %s", method, f.Error)
	return f.Result
}

// callErr returns the error object of the response, re-encoded.
func callErr(t *testing.T, c *acpclient.Conn, method string, params any) string {
	t.Helper()
	f := call(t, c, method, params)
	require.NotNil(t, f.Error, "%s unexpectedly succeeded: %s", method, f.Result)
	b, err := json.Marshal(f.Error)
	require.NoError(t, err)
	return string(b)
}

// updates returns the session/update payloads the client received.
func updates(c *acpclient.Conn) []string {
	var out []string
	for _, u := range c.Updates() {
		out = append(out, string(u.Raw))
	}
	return out
}

// awaitChunk waits for an agent_message_chunk.
func awaitChunk(ctx context.Context, c *acpclient.Conn) error {
	_, _, err := c.WaitUpdate(ctx, 0, func(u acpclient.Update) bool { return u.Kind == "agent_message_chunk" })
	return err
}

func TestLoadReplaysSessionFromEachStore(t *testing.T) {
	root := corpusRoot(t)
	model := filepath.Join(root, "acp-agent", "text-turn", "session.jsonl")
	stores := map[string]func(t *testing.T, dir string) session.Store{
		"jsonl": func(t *testing.T, dir string) session.Store {
			s, err := jsonl.Open(dir)
			require.NoError(t, err)
			return s
		},
		"sqlite": func(t *testing.T, dir string) session.Store {
			s, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
			require.NoError(t, err)
			return s
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			dir, cwd := t.TempDir(), t.TempDir()
			store := open(t, dir)
			c, stop := serveInProcess(t, store, model)
			callOK(t, c, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
			var created struct {
				SessionID string `json:"sessionId"`
			}
			require.NoError(t, json.Unmarshal(callOK(t, c, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}), &created))
			callOK(t, c, "session/prompt", promptParams(created.SessionID, "Reply with PONG."))
			live := updates(c)
			stop()
			require.NoError(t, store.Close())

			store = open(t, dir)
			defer store.Close()
			c2, stop2 := serveInProcess(t, store, model)
			defer stop2()
			callOK(t, c2, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
			require.Contains(t, callErr(t, c2, "session/load", map[string]any{"sessionId": created.SessionID, "cwd": "/elsewhere", "mcpServers": []any{}}),
				`"message":"Invalid params: session `+created.SessionID+` cwd mismatch: persisted `+cwd+`, requested /elsewhere"`)
			require.Contains(t, callErr(t, c2, "session/load", map[string]any{"sessionId": "00000000-0000-4000-8000-000000000000", "cwd": cwd, "mcpServers": []any{}}),
				`{"code":-32603,"message":"Internal error","data":{"details":"session \"00000000-0000-4000-8000-000000000000\" not found"}}`)
			res := callOK(t, c2, "session/load", map[string]any{"sessionId": created.SessionID, "cwd": cwd, "mcpServers": []any{}})
			require.JSONEq(t, `{}`, string(res))
			loaded := updates(c2)
			require.Equal(t, append([]string{`{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"Reply with PONG."}}`}, live...), loaded)
			require.Contains(t, callErr(t, c2, "session/load", map[string]any{"sessionId": created.SessionID, "cwd": cwd, "mcpServers": []any{}}),
				"is already loaded")
			// The loaded session keeps working: a new prompt continues the log.
			callOK(t, c2, "session/prompt", promptParams(created.SessionID, "Again?"))
		})
	}
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// binary builds cmd/dsh-acp once per test run.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dsh-acp-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin, buildErr = testbin.Build(dir, testbin.Agent, "")
	})
	require.NoError(t, buildErr, builtBin)
	return builtBin
}

// startBinary runs dsh-acp over real stdio.
func startBinary(t *testing.T, cwd string, args ...string) *acpclient.Process {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = cwd
	cmd.Stderr = os.Stderr
	p, err := acpclient.Spawn(cmd, acpclient.Options{Schema: stableSchema(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Kill(); p.Report(t) })
	return p
}

// TestCrashMidTurnIsRepairedOnLoad kills the real process while a turn
// streams, then loads the session in a new process: the open turn is
// closed as interrupted, durably, and the user's prompt is not lost.
func TestCrashMidTurnIsRepairedOnLoad(t *testing.T) {
	root := corpusRoot(t)
	cancelDir := filepath.Join(root, "acp-agent", "cancel")
	sessions, cwd := t.TempDir(), t.TempDir()
	c := startBinary(t, cwd, "--composition", "acp-agent", "--sessions-root", sessions,
		"--model-replay", filepath.Join(cancelDir, "session.jsonl"), "--model-replay-override", filepath.Join(cancelDir, "replay.override.json"))
	callOK(t, c.Conn, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	var created struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(callOK(t, c.Conn, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}), &created))
	_, err := c.Start("session/prompt", promptParams(created.SessionID, "Start a long task."))
	require.NoError(t, err)
	wait, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, awaitChunk(wait, c.Conn), "no agent_message_chunk before the crash")
	require.NoError(t, c.Kill())

	model := filepath.Join(root, "acp-agent", "text-turn", "session.jsonl")
	c2 := startBinary(t, cwd, "--composition", "acp-agent", "--sessions-root", sessions, "--model-replay", model)
	callOK(t, c2.Conn, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	callOK(t, c2.Conn, "session/load", map[string]any{"sessionId": created.SessionID, "cwd": cwd, "mcpServers": []any{}})
	require.Equal(t, []string{`{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"Start a long task."}}`}, updates(c2.Conn))

	files, err := filepath.Glob(filepath.Join(sessions, "*", created.SessionID+".jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 4, string(data))
	require.Contains(t, lines[1], `"type":"turn/start","seq":0`)
	require.Contains(t, lines[2], `"type":"user/message","seq":1`)
	require.Contains(t, lines[3], `"type":"turn/end","seq":2`)
	require.Contains(t, lines[3], `"data":{"turn":1,"reason":{"kind":"interrupted"}}`)
}

// TestUndoAfterCrash edits a file, crashes mid-turn, and reverts the edit
// with /undo in a new process: the journal survived the crash.
func TestUndoAfterCrash(t *testing.T) {
	sessions, cwd, scripts := t.TempDir(), t.TempDir(), t.TempDir()
	file := filepath.Join(cwd, "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("old line\n"), 0o644))
	call := func(id, name, args string) string {
		return `{"kind":"chunks","chunks":[` +
			`{"type":"block-start","index":0,"blockType":"tool-call"},` +
			`{"type":"tool-call-delta","index":0,"id":"` + id + `","name":"` + name + `","argumentsDelta":` + strconvQuote(args) + `},` +
			`{"type":"block-end","index":0,"block":{"type":"tool-call","id":"` + id + `","name":"` + name + `","arguments":` + strconvQuote(args) + `}},` +
			`{"type":"finish","reason":{"kind":"tool-calls"}}]}`
	}
	override := "[" + call("c1", "read", `{"file_path":"notes.txt"}`) + "," +
		call("c2", "edit", `{"file_path":"notes.txt","old_string":"old","new_string":"new"}`) + `,{"kind":"hang"}]`
	overridePath := filepath.Join(scripts, "override.json")
	require.NoError(t, os.WriteFile(overridePath, []byte(override), 0o644))
	header := filepath.Join(scripts, "session.jsonl")
	require.NoError(t, os.WriteFile(header, []byte(`{"type":"session","version":0,"id":"x","createdAt":0}`+"\n"), 0o644))

	c := startBinary(t, cwd, "--composition", "default", "--sessions-root", sessions, "--model-replay", header, "--model-replay-override", overridePath)
	callOK(t, c.Conn, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	var created struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(callOK(t, c.Conn, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}), &created))
	_, err := c.Start("session/prompt", promptParams(created.SessionID, "change old to new"))
	require.NoError(t, err)
	wait, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The hang after the edit streams "partial".
	require.NoError(t, awaitChunk(wait, c.Conn), "the turn never reached the hang")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "new line\n", string(data))
	require.NoError(t, c.Kill())

	c2 := startBinary(t, cwd, "--composition", "default", "--sessions-root", sessions, "--model-replay", header)
	callOK(t, c2.Conn, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	callOK(t, c2.Conn, "session/load", map[string]any{"sessionId": created.SessionID, "cwd": cwd, "mcpServers": []any{}})
	callOK(t, c2.Conn, "session/prompt", promptParams(created.SessionID, "/undo"))
	data, err = os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "old line\n", string(data))
	got := updates(c2.Conn)
	require.Contains(t, got[len(got)-1], `Undid the file changes of turn 1.\nRestored:\n- notes.txt`)
}

// withoutUpdatedAt drops the (wall-clock) updatedAt of listed sessions,
// after checking each has one.
func withoutUpdatedAt(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v struct {
		Sessions []map[string]any `json:"sessions"`
	}
	require.NoError(t, json.Unmarshal(raw, &v))
	for _, s := range v.Sessions {
		require.NotEmpty(t, s["updatedAt"], "every listed session has updatedAt")
		delete(s, "updatedAt")
	}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestListSessions: the default composition lists stored sessions (for an
// editor's history), newest first and filtered by cwd; upstream's
// compositions keep "method not found".
func TestListSessions(t *testing.T) {
	root := corpusRoot(t)
	model := filepath.Join(root, "acp-agent", "text-turn", "session.jsonl")
	sessions, cwdA, cwdB := t.TempDir(), t.TempDir(), t.TempDir()
	c := startBinary(t, cwdA, "--composition", "default", "--sessions-root", sessions, "--model-replay", model)
	init := callOK(t, c.Conn, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	require.Contains(t, string(init), `"sessionCapabilities":{"list":{},"delete":{},"additionalDirectories":{},"resume":{},"close":{}}`)
	var ids []string
	for _, cwd := range []string{cwdA, cwdB} {
		var created struct {
			SessionID string `json:"sessionId"`
		}
		require.NoError(t, json.Unmarshal(callOK(t, c.Conn, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}), &created))
		// The second session's turn fails (the recorded model has one
		// session); either way the turn is stored.
		call(t, c.Conn, "session/prompt", promptParams(created.SessionID, "hi"))
		ids = append(ids, created.SessionID)
		time.Sleep(5 * time.Millisecond) // distinct creation times
	}
	require.JSONEq(t, `{"sessions":[{"sessionId":"`+ids[1]+`","cwd":"`+cwdB+`","title":"hi"},{"sessionId":"`+ids[0]+`","cwd":"`+cwdA+`","title":"hi"}]}`,
		withoutUpdatedAt(t, callOK(t, c.Conn, "session/list", map[string]any{})))
	require.JSONEq(t, `{"sessions":[{"sessionId":"`+ids[0]+`","cwd":"`+cwdA+`","title":"hi"}]}`,
		withoutUpdatedAt(t, callOK(t, c.Conn, "session/list", map[string]any{"cwd": cwdA})))

	up := startBinary(t, cwdA, "--composition", "acp-agent", "--sessions-root", sessions, "--model-replay", model)
	require.Contains(t, callErr(t, up.Conn, "session/list", map[string]any{}), `"code":-32601`)
}
