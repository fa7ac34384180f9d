package acp

import (
	"encoding/json"
)

// MCPConnector connects sessions to the MCP servers the client lists in
// session/new, session/load and session/resume (the composition supplies
// it; see Options.MCP).
type MCPConnector interface {
	// Check validates the client's server list; an error answers the
	// request with invalid params.
	Check(servers []json.RawMessage) error
	// Connect starts connecting sess to servers in the background and
	// returns at once. Failures are the session's notices, never the
	// request's error; the servers stop when the session closes.
	Connect(sess Conversation, servers []json.RawMessage)
}

// MCPCapabilities advertises the MCP transports the agent connects to
// (stdio always).
type MCPCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// mcpCapabilities is what initialize advertises (nil without a connector).
func (s *Server) mcpCapabilities() *MCPCapabilities {
	if s.opts.MCP == nil {
		return nil
	}
	return &MCPCapabilities{HTTP: true, SSE: true}
}

// checkMCP validates a request's servers (nil when none or no connector).
func (s *Server) checkMCP(servers []json.RawMessage) error {
	if s.opts.MCP == nil || len(servers) == 0 {
		return nil
	}
	if err := s.opts.MCP.Check(servers); err != nil {
		return invalidParams("%v", err)
	}
	return nil
}

// holdMCP remembers a session's servers until its response is written.
func (s *Server) holdMCP(ls *binding, servers []json.RawMessage) {
	if s.opts.MCP == nil || len(servers) == 0 {
		return
	}
	s.mu.Lock()
	ls.mcp = servers
	s.mu.Unlock()
}

// connectMCP starts connecting a live session to the servers its request
// named, once the response that names the session is written (so a notice
// about a failing server never precedes it).
func (s *Server) connectMCP(id string) {
	s.mu.Lock()
	ls := s.sessions[id]
	var servers []json.RawMessage
	if ls != nil {
		servers, ls.mcp = ls.mcp, nil
	}
	s.mu.Unlock()
	if ls == nil || len(servers) == 0 {
		return
	}
	s.opts.MCP.Connect(ls.s, servers)
}
