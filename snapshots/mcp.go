package snapshots

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServer is a client MCP server a scenario declares (scenario.json
// "mcpServers"): the runner serves it for real, as a streamable-HTTP MCP
// server (modelcontextprotocol/go-sdk) on a loopback port, and lists it in
// session/new (and session/load) the way an editor lists the servers its
// user configured.
type MCPServer struct {
	// Name is the server's name in the client's list.
	Name string `json:"name"`
	// Tools are the tools it offers, in this order.
	Tools []MCPTool `json:"tools,omitempty"`
}

// MCPTool is one tool of a scripted MCP server.
type MCPTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// InputSchema is the tool's JSON Schema as the server lists it (an
	// object schema; default {"type":"object"}).
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// Results answer successive calls, in order; the last one answers
	// every call after it.
	Results []MCPResult `json:"results"`
}

// MCPResult is a scripted tools/call result.
type MCPResult struct {
	// Text is the result's one text block.
	Text string `json:"text"`
	// IsError marks a tool error (the call ran and failed).
	IsError bool `json:"isError,omitempty"`
}

// MCPCall is one tools/call a scripted server received.
type MCPCall struct {
	Server    string
	Tool      string
	Arguments json.RawMessage
}

// PortToken stands for a scripted MCP server's loopback port in goldens.
const PortToken = "{{port}}"

// mcpServers are a run's scripted MCP servers.
type mcpServers struct {
	list []*mcpServer

	mu    sync.Mutex
	calls []MCPCall
}

// mcpServer is one scripted server.
type mcpServer struct {
	spec    MCPServer
	srv     *httptest.Server
	crashed atomic.Bool
}

// checkMCP validates a scenario's server declarations.
func checkMCP(specs []MCPServer) error {
	seen := map[string]bool{}
	for _, s := range specs {
		if s.Name == "" {
			return fmt.Errorf("an MCP server without a name")
		}
		if seen[s.Name] {
			return fmt.Errorf("two MCP servers are named %q", s.Name)
		}
		seen[s.Name] = true
		for _, t := range s.Tools {
			if t.Name == "" {
				return fmt.Errorf("MCP server %q: a tool without a name", s.Name)
			}
			if len(t.Results) == 0 {
				return fmt.Errorf("MCP server %q, tool %q: no results", s.Name, t.Name)
			}
			if len(t.InputSchema) > 0 {
				var m struct {
					Type string `json:"type"`
				}
				if err := json.Unmarshal(t.InputSchema, &m); err != nil || m.Type != "object" {
					return fmt.Errorf(`MCP server %q, tool %q: inputSchema must be a JSON object schema with "type":"object"`, s.Name, t.Name)
				}
			}
		}
	}
	return nil
}

// startMCP serves every declared server on its own loopback port.
func startMCP(specs []MCPServer) (*mcpServers, error) {
	if err := checkMCP(specs); err != nil {
		return nil, err
	}
	set := &mcpServers{}
	for _, spec := range specs {
		s := &mcpServer{spec: spec}
		var sessions atomic.Int64
		h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server {
			return set.server(spec, func() string {
				// Deterministic ids: they can show in the client's
				// error texts.
				return fmt.Sprintf("%s-%d", spec.Name, sessions.Add(1))
			})
		}, nil)
		s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s.crashed.Load() {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			h.ServeHTTP(w, r)
		}))
		set.list = append(set.list, s)
	}
	return set, nil
}

// server builds the go-sdk server of one declaration (one per client
// session).
func (m *mcpServers) server(spec MCPServer, id func() string) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: spec.Name, Version: "1"}, &sdk.ServerOptions{GetSessionID: id})
	for _, t := range spec.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		var n atomic.Int64
		srv.AddTool(&sdk.Tool{Name: t.Name, Description: t.Description, InputSchema: schema}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			i := int(n.Add(1)) - 1
			m.mu.Lock()
			m.calls = append(m.calls, MCPCall{Server: spec.Name, Tool: t.Name, Arguments: bytes.Clone(req.Params.Arguments)})
			m.mu.Unlock()
			r := t.Results[min(i, len(t.Results)-1)]
			return &sdk.CallToolResult{IsError: r.IsError, Content: []sdk.Content{&sdk.TextContent{Text: r.Text}}}, nil
		})
	}
	return srv
}

// crash makes a server fail the way a crashed one that its supervisor
// brought back does: it no longer knows its client's session, so it
// answers every request 404, as the MCP spec prescribes for an unknown
// session. (Cutting its connections instead would make the client's next
// request fail with a transient EOF or a 500 depending on connection
// reuse, which no recording can pin.)
func (m *mcpServers) crash(name string) error {
	if m == nil {
		return fmt.Errorf("harness error: crashMcpServer %q, but the scenario declares no MCP servers", name)
	}
	for _, s := range m.list {
		if s.spec.Name == name {
			s.crashed.Store(true)
			return nil
		}
	}
	return fmt.Errorf("harness error: no MCP server named %q is declared", name)
}

// wire is the servers as session/new lists them.
func (m *mcpServers) wire() []any {
	if m == nil {
		return []any{}
	}
	out := make([]any, 0, len(m.list))
	for _, s := range m.list {
		out = append(out, struct {
			Type    string `json:"type"`
			Name    string `json:"name"`
			URL     string `json:"url"`
			Headers []any  `json:"headers"`
		}{"http", s.spec.Name, s.srv.URL + "/mcp", []any{}})
	}
	return out
}

// received returns every call the servers received, in order.
func (m *mcpServers) received() []MCPCall {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]MCPCall(nil), m.calls...)
}

// scrub replaces the servers' loopback ports in raw output by PortToken.
func (m *mcpServers) scrub(raw []byte) []byte {
	if m == nil {
		return raw
	}
	for _, s := range m.list {
		host := strings.TrimPrefix(s.srv.URL, "http://")
		if i := strings.LastIndexByte(host, ':'); i >= 0 {
			raw = bytes.ReplaceAll(raw, []byte(host), []byte(host[:i+1]+PortToken))
		}
	}
	return raw
}

// close stops every server.
func (m *mcpServers) close() {
	if m == nil {
		return
	}
	for _, s := range m.list {
		s.srv.CloseClientConnections()
		s.srv.Close()
	}
}
