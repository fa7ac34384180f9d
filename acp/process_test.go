package acp_test

// One owner per session across processes, on the wire: this test binary is
// re-executed as dsh-acp servers (the default composition over a JSONL
// store on one sessions root), and two of them ask for the same session.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/composition"
	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/acpschema"
	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
	"github.com/dsh-acp/dsh-acp/session/sqlite"
)

// serveEnv makes the re-executed test binary serve ACP on stdio with the
// sessions root it names.
const serveEnv = "DSH_ACP_TEST_SERVE"

func TestMain(m *testing.M) {
	if root := os.Getenv(serveEnv); root != "" {
		os.Exit(serveChild(root))
	}
	os.Exit(m.Run())
}

// serveChild is a dsh-acp server process: the default composition, the
// scripted model, a JSONL store on root.
func serveChild(root string) int {
	comp, ok := composition.Builtin("default")
	if !ok {
		return 2
	}
	st, err := jsonl.Open(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer st.Close()
	srv := comp.NewServer(composition.ServerOptions{Provider: newScriptProvider(), Store: st, Log: zerolog.New(os.Stderr), Version: "test", LaunchDir: root})
	if err := srv.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
		return 1
	}
	return 0
}

// child is a server process driven over its stdio by an acpclient
// connection, which validates every frame it wrote at cleanup.
type child struct {
	t *testing.T
	p *acpclient.Process
}

func startChild(t *testing.T, root string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"="+root)
	schema, err := acpschema.Stable()
	require.NoError(t, err)
	p, err := acpclient.Spawn(cmd, acpclient.Options{Schema: schema})
	require.NoError(t, err)
	c := &child{t: t, p: p}
	t.Cleanup(func() { _ = p.Kill(); p.Report(t) })
	c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	return c
}

// call sends a request and returns its response line and the lines before.
func (c *child) call(method, params string) (string, []string) {
	c.t.Helper()
	mark := c.p.Len()
	k, err := c.p.Start(method, json.RawMessage(params))
	require.NoError(c.t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := k.Wait(ctx)
	require.NoError(c.t, err, "no answer to %s (stderr: %s)", method, c.p.Stderr())
	var before []string
	for _, l := range c.p.Since(mark) {
		if bytes.Equal(l, f.Raw) {
			break
		}
		before = append(before, string(l))
	}
	return string(f.Raw), before
}

func (c *child) pid() int { return c.p.Pid() }

// exit ends the server's input and waits for it to exit.
func (c *child) exit() {
	c.t.Helper()
	require.NoError(c.t, c.p.Close(10*time.Second), "the server must exit cleanly after its input ended")
}

func loadParams(sid, cwd string) string {
	return `{"sessionId":` + acp.JSONQuote(sid) + `,"cwd":` + acp.JSONQuote(cwd) + `,"mcpServers":[]}`
}

func TestTwoProcessesOneSession(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	a := startChild(t, root)
	resp, _ := a.call("session/new", `{"cwd":`+acp.JSONQuote(ws)+`,"mcpServers":[]}`)
	var nr struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp), &nr))
	sid := nr.Result.SessionID
	require.NotEmpty(t, sid)
	resp, _ = a.call("session/prompt", acp.PromptParams(sid, "hi"))
	require.Contains(t, resp, `"result":{"stopReason":"end_turn"}`)

	// A second window opens the same history entry: refused, naming A.
	b := startChild(t, root)
	resp, _ = b.call("session/list", `{}`)
	assert.Contains(t, resp, sid, "listing needs no ownership")
	resp, before := b.call("session/load", loadParams(sid, ws))
	assert.Empty(t, before, "nothing of the held session is replayed")
	assert.Regexp(t, `^\{"jsonrpc":"2.0","id":\d+,"error":\{"code":-32602,"message":"Invalid params: session `+sid+
		` is already loaded by another process \(pid `+fmt.Sprint(a.pid())+` on host [^ ]+ since [0-9TZ:-]+\); close it there \(or end that process\) and load it again"\}\}$`, resp)

	// A keeps working, and B's refusal changed nothing of its log.
	resp, _ = a.call("session/prompt", acp.PromptParams(sid, "still mine"))
	require.Contains(t, resp, `"result":{"stopReason":"end_turn"}`)
	a.exit() // closes the session: the lock is released

	resp, before = b.call("session/load", loadParams(sid, ws))
	assert.Contains(t, resp, `"result":{`)
	assert.Contains(t, strings.Join(before, "\n"), `"text":"still mine"`, "B replays everything A did")
	resp, _ = b.call("session/prompt", acp.PromptParams(sid, "now B's"))
	require.Contains(t, resp, `"result":{"stopReason":"end_turn"}`)

	// B crashes while holding the session: the kernel drops its lock.
	c := startChild(t, root)
	resp, _ = c.call("session/load", loadParams(sid, ws))
	assert.Contains(t, resp, fmt.Sprintf("(pid %d on host", b.pid()))
	require.NoError(t, b.p.Kill())
	resp, _ = c.call("session/load", loadParams(sid, ws))
	assert.Contains(t, resp, `"result":{`)
	c.exit()

	// One log, three turns, seqs contiguous: nothing forked or lost.
	st, err := jsonl.Open(root)
	require.NoError(t, err)
	defer st.Close()
	_, evs, err := st.Load(context.Background(), sid)
	require.NoError(t, err)
	turns := 0
	for i, e := range evs {
		require.Equal(t, i, e.Seq)
		if e.Type == session.TypeTurnEnd {
			turns++
			var te session.TurnEnd
			require.NoError(t, e.Decode(&te))
			assert.Equal(t, session.EndCompleted, te.Reason.Kind)
		}
	}
	assert.Equal(t, 3, turns)
}

// A turn whose events cannot be committed fails visibly (the SQLite
// lost-write case), in every composition.
func TestTurnThatCannotBeSavedFails(t *testing.T) {
	for _, name := range []string{"default", "acp-agent"} {
		t.Run(name, func(t *testing.T) {
			comp, ok := composition.Builtin(name)
			require.True(t, ok)
			st, err := sqlite.Open(filepath.Join(t.TempDir(), "sessions.db"))
			require.NoError(t, err)
			srv := comp.NewServer(composition.ServerOptions{Provider: newScriptProvider(), Store: st, Clock: acp.FakeClock(), Log: zerolog.Nop(), Version: "test", LaunchDir: t.TempDir()})
			h := acp.StartHarness(t, srv)
			sid := h.NewSession(t.TempDir())
			f, _ := h.Call("session/prompt", acp.PromptParams(sid, "saved"))
			require.Nil(t, f.Error)
			require.JSONEq(t, `{"stopReason":"end_turn"}`, string(f.Result))

			require.NoError(t, st.Close()) // every later commit fails
			f, before := h.Call("session/prompt", acp.PromptParams(sid, "lost"))
			require.NotNil(t, f.Error, "a turn that is not in the store must not answer end_turn")
			assert.EqualValues(t, acp.CodeInternalError, f.Error.Code)
			assert.Contains(t, f.Error.Message, "Internal error: the turn's events could not be saved to the session log (")
			assert.Contains(t, f.Error.Message, "database is closed")
			assert.NotEmpty(t, before, "the turn itself ran and streamed")
		})
	}
}

// The default composition's clear errors, with the real agent.
func TestDefaultCompositionClearErrors(t *testing.T) {
	comp, ok := composition.Builtin("default")
	require.True(t, ok)
	st, err := jsonl.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	srv := comp.NewServer(composition.ServerOptions{Provider: newScriptProvider(), Store: st, Clock: acp.FakeClock(), Log: zerolog.Nop(), Version: "test", LaunchDir: t.TempDir()})
	h := acp.StartHarness(t, srv)
	ws := t.TempDir()

	gone := filepath.Join(ws, "gone")
	f, _ := h.Call("session/new", `{"cwd":`+acp.JSONQuote(gone)+`,"mcpServers":[]}`)
	require.NotNil(t, f.Error)
	assert.Equal(t, "Invalid params: cwd does not exist: "+gone, f.Error.Message)

	f, _ = h.Call("session/load", loadParams("00000000-0000-4000-8000-000000000009", ws))
	require.NotNil(t, f.Error)
	assert.EqualValues(t, acp.CodeResourceNotFound, f.Error.Code)
	assert.Equal(t, "Resource not found: no stored session 00000000-0000-4000-8000-000000000009 (it was deleted, or is stored under another sessions root)", f.Error.Message)

	sid := h.NewSession(ws)
	f, _ = h.Call("session/prompt", acp.PromptParams(sid, "fail now"))
	require.NotNil(t, f.Error)
	assert.EqualValues(t, acp.CodeInternalError, f.Error.Code)
	assert.Equal(t, "The model call failed: simulated provider error (HTTP 401). Check the API key dsh-acp runs with, then send the prompt again.", f.Error.Message)
	assert.JSONEq(t, `{"code":"AUTH","step":1}`, string(f.Error.Data))
}
