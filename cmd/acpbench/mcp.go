package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP case: a second session/new listing three real MCP servers (one
// stdio server, acpbench itself started by the agent, and two
// streamable-HTTP servers acpbench serves on loopback; three stdio ones for
// an agent that advertises no http transport). It measures the response
// time, which must not wait for the servers, and when all three have
// finished their handshake with the agent.

// mcpServerEnv, set to "stdio", makes acpbench serve MCP on its stdio;
// mcpReadyEnv names the file it creates once the agent's client has
// listed its tools.
const (
	mcpServerEnv = "ACPBENCH_MCP_SERVER"
	mcpReadyEnv  = "ACPBENCH_MCP_READY"
)

// init serves the stdio MCP server when the agent starts acpbench as one
// (the test binary serves it the same way).
func init() {
	if os.Getenv(mcpServerEnv) != "stdio" {
		return
	}
	ready := os.Getenv(mcpReadyEnv)
	srv := benchMCPServer("acpbench-stdio", func() {
		if ready != "" {
			_ = os.WriteFile(ready, nil, 0o644)
		}
	})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "acpbench MCP server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// benchMCPServer is a small real MCP server with one echo tool; ready
// runs once a client has listed its tools (the end of a connect: the
// agent can offer them; newer protocol versions have no "initialized"
// notification to wait for).
func benchMCPServer(name string, ready func()) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" && err == nil {
				ready()
			}
			return res, err
		}
	})
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo text back."}, func(_ context.Context, _ *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
	})
	return s
}

// mcpFleet is the HTTP side of the case: one loopback listener serving
// /mcp/<server>/<tag>, where tag names the iteration whose session the
// agent connects.
type mcpFleet struct {
	self string // this executable, started by agents as the stdio server
	srv  *httptest.Server

	mu    sync.Mutex
	ready map[string]int // tag → HTTP handshakes finished
}

func newMCPFleet() (*mcpFleet, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	f := &mcpFleet{self: self, ready: map[string]int{}}
	f.srv = httptest.NewServer(sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		tag := parts[len(parts)-1]
		return benchMCPServer("acpbench-http", func() {
			f.mu.Lock()
			f.ready[tag]++
			f.mu.Unlock()
		})
	}, nil))
	return f, nil
}

func (f *mcpFleet) close() {
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// servers lists three servers for one session: stdio ones create their
// ready file under dir; http ones count under tag.
func (f *mcpFleet) servers(tag, dir string, http bool) (list []any, stdio, nhttp int) {
	type pair struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	type stdioServer struct {
		Name    string   `json:"name"`
		Command string   `json:"command"`
		Args    []string `json:"args"`
		Env     []pair   `json:"env"`
	}
	type httpServer struct {
		Type    string `json:"type"`
		Name    string `json:"name"`
		URL     string `json:"url"`
		Headers []pair `json:"headers"`
	}
	add := func(i int) {
		list = append(list, stdioServer{fmt.Sprintf("bench-stdio-%d", i), f.self, []string{},
			[]pair{{mcpServerEnv, "stdio"}, {mcpReadyEnv, filepath.Join(dir, fmt.Sprintf("stdio-%d.ready", i))}}})
		stdio++
	}
	add(1)
	for i := 1; i <= 2; i++ {
		if !http {
			add(i + 1)
			continue
		}
		list = append(list, httpServer{"http", fmt.Sprintf("bench-http-%d", i), fmt.Sprintf("%s/mcp/%d/%s", f.srv.URL, i, tag), []pair{}})
		nhttp++
	}
	return list, stdio, nhttp
}

// connected counts the servers of a session that finished their
// handshake.
func (f *mcpFleet) connected(tag, dir string, stdio int) (nstdio, nhttp int) {
	f.mu.Lock()
	nhttp = f.ready[tag]
	f.mu.Unlock()
	for i := 1; i <= stdio; i++ {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("stdio-%d.ready", i))); err == nil {
			nstdio++
		}
	}
	return nstdio, nhttp
}

// advertisesHTTP reports whether an initialize result advertises MCP over
// http.
func advertisesHTTP(init json.RawMessage) bool {
	var r struct {
		AgentCapabilities struct {
			MCPCapabilities struct {
				HTTP bool `json:"http"`
			} `json:"mcpCapabilities"`
		} `json:"agentCapabilities"`
	}
	return json.Unmarshal(init, &r) == nil && r.AgentCapabilities.MCPCapabilities.HTTP
}

// mcpSession opens two more sessions on c, one without MCP servers (the
// control) and one listing three, and records both session/new response
// times and when the three servers were all connected (at most 10 s
// later).
func (r *runner) mcpSession(ctx context.Context, c *client, ws string, s sample) error {
	r.mcpTags++
	tag := fmt.Sprintf("%s-%d", filepath.Base(ws), r.mcpTags)
	dir, err := os.MkdirTemp(r.work, "mcp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	list, stdio, nhttp := r.mcp.servers(tag, dir, advertisesHTTP(c.initResult))
	step, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	// The control: another session without servers, in the same state of
	// the process.
	sent, res, err := c.call(step, "session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})
	if err != nil {
		return fmt.Errorf("second session/new: %w", err)
	}
	s["session_new_again_ms"] = ms(res.at.Sub(sent))
	sent, res, err = c.call(step, "session/new", map[string]any{"cwd": ws, "mcpServers": list})
	if err != nil {
		return fmt.Errorf("session/new with MCP servers: %w", err)
	}
	s["session_new_mcp_ms"] = ms(res.at.Sub(sent))
	deadline := time.Now().Add(10 * time.Second)
	for {
		ns, nh := r.mcp.connected(tag, dir, stdio)
		if ns >= stdio && nh >= nhttp {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the agent did not connect its MCP servers within 10 s: %d of %d stdio, %d of %d http", ns, stdio, nh, nhttp)
		}
		time.Sleep(200 * time.Microsecond)
	}
	s["mcp_connected_ms"] = ms(time.Since(sent))
	return nil
}
