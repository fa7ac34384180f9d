package composition_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/composition"
	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/proctree"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
)

// The test binary doubles as a stdio MCP server when DSH_MCP_TEST_SERVER
// is set (init runs before TestMain).
func init() {
	if os.Getenv("DSH_MCP_TEST_SERVER") != "serve" {
		return
	}
	if f := os.Getenv("DSH_MCP_TEST_PIDFILE"); f != "" {
		_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	if err := mcpTestServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

type mcpEchoIn struct {
	Text string `json:"text"`
}

// mcpTestServer offers echo and crash (the process dies mid-call).
func mcpTestServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "dsh-test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo text back."}, func(_ context.Context, _ *sdk.CallToolRequest, in mcpEchoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Dies."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "crashing now")
		os.Exit(3)
		return nil, nil, nil
	})
	return s
}

// finalUpdate is the last tool_call_update among lines of the call whose
// card has title.
func finalUpdate(lines []string, sid, title string) string {
	callID := ""
	for _, u := range updates(lines, sid) {
		var c struct {
			SessionUpdate, ToolCallID, Title string
		}
		_ = json.Unmarshal([]byte(u), &c)
		if c.SessionUpdate == "tool_call" && c.Title == title {
			callID = c.ToolCallID
		}
	}
	last := ""
	for _, u := range updates(lines, sid) {
		if strings.Contains(u, `"sessionUpdate":"tool_call_update"`) && strings.Contains(u, `"toolCallId":"`+callID+`"`) {
			last = u
		}
	}
	return last
}

// allowAlways answers every permission request "always" and counts them.
func allowAlways(asked *atomic.Int32) agentAnswer {
	return func(method string, _ json.RawMessage) any {
		if method == "session/request_permission" {
			asked.Add(1)
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-always"}}
		}
		return noReply{}
	}
}

// A session/new with a stdio, an http and a broken server: the response
// does not wait for them, the model is offered their tools, a call each
// asks once per server and runs, the broken one and a crash are notices
// in the session, and closing the connection stops the stdio server.
func TestClientMCPServersOverTheWire(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	httpSrv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcpTestServer() }, nil))
	t.Cleanup(httpSrv.Close)
	pidfile := filepath.Join(t.TempDir(), "pid")
	root := t.TempDir()
	ws := t.TempDir()
	p := newProvider()
	var asked atomic.Int32
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, allowAlways(&asked))

	init := srv.c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	assert.Contains(t, string(init), `"mcpCapabilities":{"http":true,"sse":true}`)

	servers := []map[string]any{
		{"name": "local", "command": self, "args": []string{}, "env": []map[string]string{{"name": "DSH_MCP_TEST_SERVER", "value": "serve"}, {"name": "DSH_MCP_TEST_PIDFILE", "value": pidfile}}},
		{"type": "http", "name": "web", "url": httpSrv.URL, "headers": []map[string]string{}},
		{"name": "broken", "command": "/nonexistent/mcp", "args": []string{}, "env": []map[string]string{}},
	}
	begin := time.Now()
	raw := srv.c.call("session/new", map[string]any{"cwd": ws, "mcpServers": servers})
	assert.Less(t, time.Since(begin), time.Second, "session/new does not wait for the servers")
	sid := decodeResult(t, raw).SessionID
	require.NotEmpty(t, sid)

	p.script("use mcp", toolCall{Name: "mcp__local__echo", Args: `{"text":"from stdio"}`}, toolCall{Name: "mcp__web__echo", Args: `{"text":"from http"}`})
	stop, lines := srv.prompt(t, sid, "use mcp")
	require.Equal(t, "end_turn", stop)
	reqs := p.requestsFor(sid)
	require.NotEmpty(t, reqs)
	tools := toolNames(reqs[0])
	assert.Contains(t, tools, "mcp__local__echo", "the first request waits for servers still connecting")
	assert.Contains(t, tools, "mcp__web__crash")
	assert.NotContains(t, strings.Join(tools, ","), "mcp__broken__")
	assert.Contains(t, finalUpdate(lines, sid, "echo (MCP: local)"), "echo: from stdio")
	assert.Contains(t, finalUpdate(lines, sid, "echo (MCP: web)"), "echo: from http")
	assert.Equal(t, int32(2), asked.Load(), "one question per server")
	all := strings.Join(srv.c.snapshot(), "\n")
	assert.Contains(t, all, `The MCP server \"broken\" could not be started`, "a server that fails to start is a notice in the session")

	p.script("again", toolCall{Name: "mcp__local__echo", Args: `{"text":"twice"}`})
	_, lines = srv.prompt(t, sid, "again")
	assert.Contains(t, finalUpdate(lines, sid, "echo (MCP: local)"), "echo: twice")
	assert.Equal(t, int32(2), asked.Load(), "\"always\" is remembered for the session")

	p.script("crash it", toolCall{Name: "mcp__local__crash", Args: `{}`})
	stop, lines = srv.prompt(t, sid, "crash it")
	require.Equal(t, "end_turn", stop, "a crashing server never fails the turn")
	assert.Contains(t, finalUpdate(lines, sid, "crash (MCP: local)"), `"status":"failed"`)
	require.Eventually(t, func() bool {
		return strings.Contains(strings.Join(srv.c.snapshot(), "\n"), `The MCP server \"local\" stopped`)
	}, waitFor, 10*time.Millisecond, "the crash is a notice")
	_, _ = srv.prompt(t, sid, "after the crash")
	reqs = p.requestsFor(sid)
	last := strings.Join(toolNames(reqs[len(reqs)-1]), ",")
	assert.NotContains(t, last, "mcp__local__", "the crashed server's tools are gone")
	assert.Contains(t, last, "mcp__web__echo")
}

// Closing the session's connection stops its stdio servers.
func TestMCPServersStopWithTheirSession(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	pidfile := filepath.Join(t.TempDir(), "pid")
	ws := t.TempDir()
	p := newProvider()
	srv := serve(t, "default", openStore(t, t.TempDir()), ws, p, map[string]any{}, nil)
	sid := decodeResult(t, srv.c.call("session/new", map[string]any{"cwd": ws, "mcpServers": []map[string]any{
		{"name": "local", "command": self, "args": []string{}, "env": []map[string]string{{"name": "DSH_MCP_TEST_SERVER", "value": "serve"}, {"name": "DSH_MCP_TEST_PIDFILE", "value": pidfile}}},
	}})).SessionID
	stop, _ := srv.prompt(t, sid, "hello")
	require.Equal(t, "end_turn", stop)
	raw, err := os.ReadFile(pidfile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(string(raw))
	require.NoError(t, err)
	require.True(t, proctree.Running(pid))
	srv.stop()
	require.Eventually(t, func() bool { return !proctree.Running(pid) }, waitFor, 10*time.Millisecond, "the server stopped with its session")
}

func TestMCPServerListIsChecked(t *testing.T) {
	ws := t.TempDir()
	srv := serve(t, "default", openStore(t, t.TempDir()), ws, newProvider(), map[string]any{}, nil)
	_, ch := srv.c.request("session/new", map[string]any{"cwd": ws, "mcpServers": []map[string]any{{"name": "x", "command": "relative", "args": []string{}, "env": []any{}}}})
	f := srv.c.await(ch, "session/new")
	assert.Contains(t, string(f.Error), `Invalid params: MCP server \"x\": command must be an absolute path`)

	_, ch = srv.c.request("session/new", map[string]any{"cwd": ws, "mcpServers": []map[string]any{
		{"name": "my tools", "command": "/bin/a", "args": []string{}, "env": []any{}},
		{"type": "http", "name": "my_tools", "url": "http://127.0.0.1:1/", "headers": []any{}},
	}})
	f = srv.c.await(ch, "session/new")
	assert.Contains(t, string(f.Error), `two MCP servers are named \"my_tools\" (or alike`)
}

// BenchmarkSessionNewWithThreeMCPServers measures session/new's response
// time over the wire with three MCP servers configured (a stdio one and
// two streamable-http ones, all real): the servers connect in the
// background, so the response does not wait for them (target < 1 ms).
// Each session is closed (untimed), which stops its servers.
func BenchmarkSessionNewWithThreeMCPServers(b *testing.B) {
	self, err := os.Executable()
	require.NoError(b, err)
	h := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcpTestServer() }, nil))
	defer h.Close()
	comp, ok := composition.Builtin("default")
	require.True(b, ok)
	st, err := jsonl.Open(b.TempDir())
	require.NoError(b, err)
	defer st.Close()
	srv := comp.NewServer(composition.ServerOptions{Provider: newProvider(), Store: st, Log: zerolog.Nop(), Version: "bench", LaunchDir: b.TempDir(),
		Getenv: func(string) string { return "" }})
	c := acpclient.Serve(srv.Serve, acpclient.Options{NoTranscript: true})
	ctx := context.Background()
	call := func(method string, params any) json.RawMessage {
		res, err := c.Call(ctx, method, params)
		require.NoError(b, err)
		return res
	}
	call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	ws := b.TempDir()
	params := map[string]any{"cwd": ws, "mcpServers": []map[string]any{
		{"name": "local", "command": self, "args": []string{}, "env": []map[string]string{{"name": "DSH_MCP_TEST_SERVER", "value": "serve"}}},
		{"type": "http", "name": "one", "url": h.URL, "headers": []map[string]string{}},
		{"type": "http", "name": "two", "url": h.URL, "headers": []map[string]string{}},
	}}
	// DSH_BENCH_NO_MCP=1 measures the same session/new without servers,
	// for comparison.
	if os.Getenv("DSH_BENCH_NO_MCP") != "" {
		params["mcpServers"] = []any{}
	}
	var total time.Duration
	for b.Loop() {
		begin := time.Now()
		res := call("session/new", params)
		total += time.Since(begin)
		b.StopTimer()
		var r struct {
			SessionID string `json:"sessionId"`
		}
		require.NoError(b, json.Unmarshal(res, &r), string(res))
		require.NotEmpty(b, r.SessionID, string(res))
		call("session/close", map[string]any{"sessionId": r.SessionID})
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/session-new")
	_ = c.CloseWrite()
	<-c.Stopped()
}
