package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/mcp"
	"github.com/dsh-acp/dsh-acp/internal/proctree"
	"github.com/dsh-acp/dsh-acp/session"
)

// answerer answers every approval with out and counts the questions.
type answerer struct {
	mu  sync.Mutex
	out approval.Outcome
	n   int
}

func (a *answerer) Answer(context.Context, string, approval.Request) (approval.Outcome, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	return a.out, true, nil
}

func (a *answerer) asked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// notices collects the notices a set shows.
type notices struct {
	mu   sync.Mutex
	list []string
}

func (n *notices) add(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, s)
}

func (n *notices) all() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.list, "|")
}

type env struct{ log *session.Log }

func (e env) Cwd() string       { return "/" }
func (e env) Log() *session.Log { return e.log }

func (e env) Host() *capabilities.Host { return nil }
func newEnv() env {
	log := session.NewLog(session.Header{ID: "s1", Cwd: "/"}, func() int64 { return 0 }, nil)
	log.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	return env{log}
}
func self(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	require.NoError(t, err)
	return p
}
func stdio(t *testing.T, name, mode string, extra ...mcp.Pair) mcp.Server {
	return mcp.Server{Name: name, Transport: mcp.Stdio, Command: self(t), Env: append([]mcp.Pair{{Name: "DSH_MCP_TEST_SERVER", Value: mode}}, extra...)}
}

type fixture struct {
	set  *mcp.Set
	reg  *capabilities.Registry
	ans  *answerer
	note *notices
	env  env
}

func start(t *testing.T, out approval.Outcome, timeout time.Duration, servers ...mcp.Server) *fixture {
	t.Helper()
	f := &fixture{ans: &answerer{out: out}, note: &notices{}, env: newEnv()}
	svc := approval.NewService("ask", func() string { return "id" }, f.ans)
	f.set = mcp.Start(mcp.Config{Approver: svc, Notify: f.note.add, ConnectTimeout: timeout, Environ: []string{"PATH=" + os.Getenv("PATH")}, Dir: t.TempDir()}, servers)
	f.reg = capabilities.NewRegistry()
	f.reg.Attach(f.set)
	t.Cleanup(func() { _ = f.reg.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, f.set.Wait(ctx))
	return f
}

func (f *fixture) call(name, args string) capabilities.Outcome {
	return f.reg.Execute(context.Background(), f.env, "call-"+name, name, args)
}

func text(o capabilities.Outcome) string {
	var parts []string
	for _, b := range o.Content {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

func names(r *capabilities.Registry) []string {
	var out []string
	for _, t := range r.Tools() {
		out = append(out, t.Name())
	}
	return out
}

func TestStdioServerToolsCallsAndApproval(t *testing.T) {
	f := start(t, approval.AllowedAlways, 0, stdio(t, "local tools", "serve", mcp.Pair{Name: "DSH_MCP_TEST_VALUE", Value: "42"}))
	require.Equal(t, []string{"mcp__local_tools__crash", "mcp__local_tools__echo", "mcp__local_tools__env", "mcp__local_tools__fail", "mcp__local_tools__grow", "mcp__local_tools__header"}, names(f.reg))

	echo, ok := f.reg.Lookup("mcp__local_tools__echo")
	require.True(t, ok)
	schema, err := echo.Schema().MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(schema), `"text":{"description":"the text to echo","type":"string"}`, "the server's own schema is offered")
	assert.Contains(t, echo.Description(), `from the MCP server "local tools"`)

	out := f.call("mcp__local_tools__echo", `{"text":"hi","times":2}`)
	require.False(t, out.IsError, text(out))
	assert.Equal(t, "echo: hihi", text(out))
	assert.Equal(t, 1, f.ans.asked(), "the first use asks")

	out = f.call("mcp__local_tools__env", `{}`)
	assert.Equal(t, "value=42", text(out), "the server's env reaches it")
	assert.Equal(t, 1, f.ans.asked(), "\"always\" is remembered for the session")

	out = f.call("mcp__local_tools__echo", `{"times":"many"}`)
	require.True(t, out.IsError)
	assert.Equal(t, "INVALID_ARGS", out.Error.Code, "the raw schema validates before the call")
	assert.Contains(t, text(out), `missing property 'text'`)

	out = f.call("mcp__local_tools__fail", `{}`)
	require.True(t, out.IsError)
	assert.Equal(t, "Error: the widget is broken", text(out))
	assert.Equal(t, "MCP_TOOL_ERROR", out.Error.Code)
	assert.Empty(t, f.note.all())
}

func TestToolListChangesAreFollowed(t *testing.T) {
	f := start(t, approval.AllowedAlways, 0, stdio(t, "s", "serve"))
	assert.NotContains(t, names(f.reg), "mcp__s__grown")
	assert.Equal(t, "grew", text(f.call("mcp__s__grow", `{}`)))
	require.Eventually(t, func() bool {
		for _, n := range names(f.reg) {
			if n == "mcp__s__grown" {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "a tool the server added appears")
	assert.Equal(t, "grown here", text(f.call("mcp__s__grown", `{}`)))
}

func TestApprovalOnceAsksAgainAndRejectionRefuses(t *testing.T) {
	f := start(t, approval.AllowedOnce, 0, stdio(t, "s", "serve"))
	f.call("mcp__s__echo", `{"text":"a"}`)
	f.call("mcp__s__echo", `{"text":"b"}`)
	assert.Equal(t, 2, f.ans.asked(), "allowed once covers one call")

	r := start(t, approval.Rejected, 0, stdio(t, "s", "serve"))
	out := r.call("mcp__s__echo", `{"text":"a"}`)
	require.True(t, out.IsError)
	assert.Equal(t, "MCP_NOT_APPROVED", out.Error.Code)
	assert.Contains(t, text(out), "approval was refused")

	never := &answerer{out: approval.AllowedAlways}
	set := mcp.Start(mcp.Config{Approver: approval.NewService("never", func() string { return "id" }, never), Environ: []string{"PATH=" + os.Getenv("PATH")}}, []mcp.Server{stdio(t, "s", "serve")})
	reg := capabilities.NewRegistry()
	reg.Attach(set)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	require.NoError(t, set.Wait(context.Background()))
	out = reg.Execute(context.Background(), newEnv(), "c1", "mcp__s__echo", `{"text":"a"}`)
	require.True(t, out.IsError)
	assert.Equal(t, "MCP_NOT_APPROVED", out.Error.Code, "the policy never refuses every call")
	assert.Zero(t, never.asked(), "without asking")
}

func TestCrashingServerBecomesNoticeAndLosesItsTools(t *testing.T) {
	f := start(t, approval.AllowedAlways, 0, stdio(t, "fragile", "serve"), stdio(t, "steady", "serve"))
	out := f.call("mcp__fragile__crash", `{}`)
	require.True(t, out.IsError, "a crash mid-call is a failed call, never a failed turn")
	require.Eventually(t, func() bool { return strings.Contains(f.note.all(), `The MCP server "fragile" stopped`) }, 10*time.Second, 10*time.Millisecond)
	assert.Contains(t, f.note.all(), "crashing now", "the server's last stderr is shown")
	assert.Contains(t, f.note.all(), "Its tools are gone")
	for _, n := range names(f.reg) {
		assert.False(t, strings.HasPrefix(n, "mcp__fragile__"), n)
	}
	out = f.call("mcp__fragile__echo", `{"text":"x"}`)
	assert.Equal(t, "UNKNOWN_TOOL", out.Error.Code)
	assert.Equal(t, "echo: ok", text(f.call("mcp__steady__echo", `{"text":"ok"}`)), "the other server is unaffected")
}

func TestStartFailuresAndTimeoutsAreNotices(t *testing.T) {
	begin := time.Now()
	f := &fixture{note: &notices{}}
	set := mcp.Start(mcp.Config{Notify: f.note.add, ConnectTimeout: 500 * time.Millisecond}, []mcp.Server{
		{Name: "missing", Transport: mcp.Stdio, Command: "/nonexistent/mcp-server"},
		stdio(t, "exits", "exit"),
		stdio(t, "slow", "hang"),
		{Name: "nothing", Transport: mcp.HTTP, URL: "http://127.0.0.1:1/mcp"},
	})
	assert.Less(t, time.Since(begin), 50*time.Millisecond, "Start returns at once")
	require.NoError(t, set.Wait(context.Background()))
	all := f.note.all()
	assert.Contains(t, all, `The MCP server "missing" could not be started`)
	assert.Contains(t, all, `The MCP server "exits" could not be started`)
	assert.Contains(t, all, "cannot open the database")
	assert.Contains(t, all, `The MCP server "slow" could not be used: did not answer within 500ms`)
	assert.Contains(t, all, `The MCP server "nothing" could not be started`)
	assert.Empty(t, set.Tools())
	for _, st := range set.Statuses() {
		assert.Equal(t, mcp.Failed, st.State, st.Name)
	}
	require.NoError(t, set.Close(context.Background()))
}

func TestCloseStopsStdioServers(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	f := start(t, approval.AllowedAlways, 0, stdio(t, "s", "serve", mcp.Pair{Name: "DSH_MCP_TEST_PIDFILE", Value: pidfile}))
	raw, err := os.ReadFile(pidfile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(string(raw))
	require.NoError(t, err)
	require.True(t, proctree.Running(pid), "the server runs")
	require.NoError(t, f.reg.Close(context.Background()))
	assert.False(t, proctree.Running(pid), "the server stopped with its session")
	assert.Empty(t, f.set.Tools())
	assert.Empty(t, f.note.all(), "a deliberate stop is no notice")
}

func TestHTTPAndSSEServers(t *testing.T) {
	var dead atomic.Bool // the http server "crashed": every connection is cut
	h := sdk.NewStreamableHTTPHandler(testServer, nil)
	streamable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if dead.Load() {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = c.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(streamable.Close)
	sse := httptest.NewServer(sdk.NewSSEHandler(testServer, nil))
	t.Cleanup(sse.Close)
	f := start(t, approval.AllowedAlways, 0,
		mcp.Server{Name: "web", Transport: mcp.HTTP, URL: streamable.URL, Headers: []mcp.Pair{{Name: "X-Test", Value: "sent"}}},
		mcp.Server{Name: "old", Transport: mcp.SSE, URL: sse.URL},
	)
	assert.Equal(t, "echo: over http", text(f.call("mcp__web__echo", `{"text":"over http"}`)))
	assert.Equal(t, "header=sent", text(f.call("mcp__web__header", `{}`)), "configured headers reach the server")
	assert.Equal(t, "echo: over sse", text(f.call("mcp__old__echo", `{"text":"over sse"}`)))
	assert.Equal(t, 2, f.ans.asked(), "one question per server")

	dead.Store(true)
	out := f.call("mcp__web__echo", `{"text":"gone"}`)
	require.True(t, out.IsError, "a server that went away fails the call only")
	assert.Contains(t, text(out), `the MCP server "web" failed the call to echo`)
	assert.Equal(t, "echo: still", text(f.call("mcp__old__echo", `{"text":"still"}`)), "the other server is unaffected")
}

// A connection outlives the connect timeout (an SSE stream is bound to
// the context it was opened with).
func TestConnectionsOutliveTheConnectTimeout(t *testing.T) {
	sse := httptest.NewServer(sdk.NewSSEHandler(testServer, nil))
	t.Cleanup(sse.Close)
	streamable := httptest.NewServer(sdk.NewStreamableHTTPHandler(testServer, nil))
	t.Cleanup(streamable.Close)
	// Long enough for the stdio server (this test binary, under -race) to
	// start on a loaded machine; the calls come well after it ran out.
	const connect = 1500 * time.Millisecond
	t0 := time.Now()
	f := start(t, approval.AllowedAlways, connect,
		mcp.Server{Name: "old", Transport: mcp.SSE, URL: sse.URL},
		mcp.Server{Name: "web", Transport: mcp.HTTP, URL: streamable.URL},
		stdio(t, "local", "serve"))
	time.Sleep(time.Until(t0.Add(connect + 400*time.Millisecond)))
	assert.Equal(t, "echo: later", text(f.call("mcp__old__echo", `{"text":"later"}`)))
	assert.Equal(t, "echo: later", text(f.call("mcp__web__echo", `{"text":"later"}`)))
	assert.Equal(t, "echo: later", text(f.call("mcp__local__echo", `{"text":"later"}`)))
	assert.Empty(t, f.note.all())
}

func TestParse(t *testing.T) {
	s, err := mcp.Parse(json.RawMessage(`{"name":"fs","command":"/usr/bin/fs-mcp","args":["--root","/w"],"env":[{"name":"A","value":"1"}]}`))
	require.NoError(t, err)
	assert.Equal(t, mcp.Server{Name: "fs", Transport: mcp.Stdio, Command: "/usr/bin/fs-mcp", Args: []string{"--root", "/w"}, Env: []mcp.Pair{{Name: "A", Value: "1"}}}, s)
	s, err = mcp.Parse(json.RawMessage(`{"type":"http","name":"h","url":"https://x.example/mcp","headers":[{"name":"Authorization","value":"Bearer t"}]}`))
	require.NoError(t, err)
	assert.Equal(t, mcp.HTTP, s.Transport)
	assert.Equal(t, []mcp.Pair{{Name: "Authorization", Value: "Bearer t"}}, s.Headers)
	for raw, want := range map[string]string{
		`{"name":"x","command":"relative","args":[],"env":[]}`:    "absolute path",
		`{"type":"sse","name":"x","url":"ftp://h/","headers":[]}`: "http(s) URL",
		`{"type":"ws","name":"x","url":"http://h/","headers":[]}`: "unsupported transport",
		`{"name":"","command":"/bin/x","args":[],"env":[]}`:       "without a name",
		`[1]`: "malformed",
	} {
		_, err := mcp.Parse(json.RawMessage(raw))
		require.Error(t, err, raw)
		assert.Contains(t, err.Error(), want, raw)
	}
	assert.Equal(t, "mcp__my_server__do-it", mcp.ToolName("my server", "do-it"))
	assert.Len(t, mcp.ToolName(strings.Repeat("s", 80), "t"), 64)
}
