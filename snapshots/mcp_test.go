package snapshots

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The recorded MCP scenarios reach real servers: the calls the model made
// arrive at the scripted servers with the model's arguments, and the
// servers' ports never reach a golden.
func TestMCPScenariosReachTheirServers(t *testing.T) {
	for name, want := range map[string][]MCPCall{
		"mcp-tool-call": {
			{Server: "tracker", Tool: "lookup_issue", Arguments: json.RawMessage(`{"id":42}`)},
			{Server: "tracker", Tool: "lookup_issue", Arguments: json.RawMessage(`{"id":43}`)},
		},
		// After the crash the builds server answers nothing: only the
		// tracker gets the second turn's call.
		"mcp-server-crash": {
			{Server: "builds", Tool: "last_build", Arguments: json.RawMessage(`{}`)},
			{Server: "tracker", Tool: "lookup_issue", Arguments: json.RawMessage(`{"id":42}`)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc, err := Load(filepath.Join("testdata", "default", name))
			require.NoError(t, err)
			r := Run(context.Background(), sc, InProcess{Version: "test"}, Options{Timeout: 30 * time.Second})
			require.True(t, r.Passed, "%s\n%s", r.Message, r.Diff)
			require.Len(t, r.MCPCalls, len(want))
			for i, c := range r.MCPCalls {
				assert.Equal(t, want[i].Server, c.Server)
				assert.Equal(t, want[i].Tool, c.Tool)
				assert.JSONEq(t, string(want[i].Arguments), string(c.Arguments))
			}
			golden, err := os.ReadFile(sc.File("stdout.golden.jsonl"))
			require.NoError(t, err)
			assert.NotRegexp(t, `127\.0\.0\.1:[0-9]`, string(golden))
		})
	}
}

// A crashed server is a notice in the turn that finds it gone, and the
// turn goes on with the other server.
func TestMCPCrashIsANoticeAndTheTurnGoesOn(t *testing.T) {
	sc, err := Load(filepath.Join("testdata", "default", "mcp-server-crash"))
	require.NoError(t, err)
	r := Run(context.Background(), sc, InProcess{Version: "test"}, Options{Timeout: 30 * time.Second})
	require.True(t, r.Passed, "%s\n%s", r.Message, r.Diff)
	require.Len(t, r.Logs, 1)
	log := string(r.Logs[0])
	notice := strings.Index(log, `"type":"command/result"`)
	require.Positive(t, notice, "the crash is logged as a notice")
	assert.Contains(t, log[notice:], `The MCP server \"builds\" stopped`)
	assert.Contains(t, log[notice:], `#42 Login fails on Safari 17`, "the turn went on and reached the other server")
	assert.Contains(t, log, `"removed":["mcp__builds__last_build"]`, "the next request no longer offers the crashed server's tools")
}

func TestMCPDeclarationsAreChecked(t *testing.T) {
	tool := func(schema string) MCPTool {
		return MCPTool{Name: "t", InputSchema: json.RawMessage(schema), Results: []MCPResult{{Text: "x"}}}
	}
	for want, specs := range map[string][]MCPServer{
		"without a name":   {{Tools: []MCPTool{tool("")}}},
		"two MCP servers":  {{Name: "a"}, {Name: "a"}},
		"no results":       {{Name: "a", Tools: []MCPTool{{Name: "t"}}}},
		"a tool without":   {{Name: "a", Tools: []MCPTool{{Results: []MCPResult{{Text: "x"}}}}}},
		`"type":"object"`:  {{Name: "a", Tools: []MCPTool{tool(`{"type":"string"}`)}}},
		"JSON object sche": {{Name: "a", Tools: []MCPTool{tool(`[1]`)}}},
	} {
		_, err := startMCP(specs)
		require.Error(t, err, want)
		assert.Contains(t, err.Error(), want)
	}
	var none *mcpServers
	assert.Equal(t, []any{}, none.wire(), "without servers session/new lists none, as upstream's client does")
	assert.ErrorContains(t, none.crash("x"), "declares no MCP servers")
}

// A scripted server answers successive calls with successive results
// (the last repeating) and a crash makes it answer 404 to its session.
func TestScriptedMCPServerScript(t *testing.T) {
	servers, err := startMCP([]MCPServer{{Name: "s", Tools: []MCPTool{{Name: "t", Results: []MCPResult{{Text: "one"}, {Text: "two", IsError: true}}}}}})
	require.NoError(t, err)
	t.Cleanup(servers.close)
	url := servers.list[0].srv.URL
	assert.Equal(t, []byte(`"127.0.0.1:{{port}}/mcp"`), servers.scrub([]byte(`"`+strings.TrimPrefix(url, "http://")+`/mcp"`)))
	texts := callScripted(t, url+"/mcp", 3)
	assert.Equal(t, []string{"one", "two (error)", "two (error)"}, texts)
	require.NoError(t, servers.crash("s"))
	resp, err := http.Post(url+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "a crashed server no longer knows any session")
	require.ErrorContains(t, servers.crash("other"), `no MCP server named "other"`)
	assert.Len(t, servers.received(), 3)
}

// callScripted calls tool t of the server at url n times over a real
// go-sdk client session.
func callScripted(t *testing.T, url string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, nil)
	require.NoError(t, err)
	defer cs.Close()
	var out []string
	for range n {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "t", Arguments: map[string]any{}})
		require.NoError(t, err)
		require.Len(t, res.Content, 1)
		text := res.Content[0].(*sdk.TextContent).Text
		if res.IsError {
			text += " (error)"
		}
		out = append(out, text)
	}
	return out
}
