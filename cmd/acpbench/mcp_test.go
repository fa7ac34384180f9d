package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The MCP case's servers are real: a go-sdk client connects to each of
// the three listed servers the way an agent does (the stdio one is this
// binary, started with the listed command and environment), and each
// counts as connected once its tools were listed.
func TestMCPFleetServesRealServers(t *testing.T) {
	f, err := newMCPFleet()
	require.NoError(t, err)
	t.Cleanup(f.close)
	dir := t.TempDir()
	list, stdio, nhttp := f.servers("it-1", dir, true)
	require.Len(t, list, 3)
	assert.Equal(t, 1, stdio)
	assert.Equal(t, 2, nhttp)
	ns, nh := f.connected("it-1", dir, stdio)
	assert.Zero(t, ns+nh, "nothing is connected before a client lists tools")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, s := range list {
		raw, err := json.Marshal(s)
		require.NoError(t, err)
		var srv struct {
			Type    string
			URL     string
			Command string
			Env     []struct{ Name, Value string }
		}
		require.NoError(t, json.Unmarshal(raw, &srv))
		var tr sdk.Transport
		if srv.Type == "http" {
			tr = &sdk.StreamableClientTransport{Endpoint: srv.URL}
		} else {
			cmd := exec.Command(srv.Command)
			for _, e := range srv.Env {
				cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
			}
			tr = &sdk.CommandTransport{Command: cmd}
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, tr, nil)
		require.NoError(t, err, string(raw))
		tools, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		require.Len(t, tools.Tools, 1)
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		require.NoError(t, err)
		assert.Equal(t, "hi", res.Content[0].(*sdk.TextContent).Text)
		require.NoError(t, cs.Close())
	}
	ns, nh = f.connected("it-1", dir, stdio)
	assert.Equal(t, 1, ns)
	assert.Equal(t, 2, nh)
	ns, nh = f.connected("it-2", t.TempDir(), stdio)
	assert.Zero(t, ns+nh, "another iteration's servers are counted apart")

	list, stdio, nhttp = f.servers("it-3", dir, false)
	assert.Len(t, list, 3)
	assert.Equal(t, 3, stdio, "without http, three stdio servers")
	assert.Zero(t, nhttp)
}

func TestAdvertisesHTTP(t *testing.T) {
	assert.True(t, advertisesHTTP(json.RawMessage(`{"agentCapabilities":{"mcpCapabilities":{"http":true,"sse":true}}}`)))
	assert.False(t, advertisesHTTP(json.RawMessage(`{"agentCapabilities":{}}`)))
	assert.False(t, advertisesHTTP(nil))
}

func TestDistributionTable(t *testing.T) {
	rows := distribution([]agentReport{{Name: "a", Metrics: map[string]Summary{
		"session_new_mcp_ms": summarize([]float64{0.4, 0.2, 0.3, 5, 0.5}),
	}}})
	require.Len(t, rows, 2)
	assert.Equal(t, []string{"a", "later session, 3 MCP servers", "5", "0.20", "0.30", "0.40", "0.50", "3.20", "5.00"}, rows[1])
	assert.Len(t, distribution(nil), 1, "only the header without samples")
}
