// Package mcp connects a session to the MCP servers its editor configured
// (modelcontextprotocol/go-sdk; stdio, streamable HTTP and SSE) and offers
// their tools to the model as mcp__<server>__<tool>, each with the server's
// own JSON Schema. Servers connect in the background; one that fails to
// start, crashes or does not answer in time is reported to the user as a
// notice and never fails the session or its turn. Calls ask the user on a
// server's first use; "always" is remembered for the session.
package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Transport is how a server is reached.
type Transport string

// Transports.
const (
	Stdio Transport = "stdio"
	HTTP  Transport = "http"
	SSE   Transport = "sse"
)

// Pair is one environment variable or HTTP header.
type Pair struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Server is one MCP server as an ACP client describes it (McpServer:
// stdio {name, command, args, env}, or {type: "http"|"sse", name, url,
// headers}).
type Server struct {
	// Name identifies the server; its tools are prefixed with it.
	Name string
	// Transport is stdio, http or sse.
	Transport Transport
	// Command, Args and Env start a stdio server.
	Command string
	Args    []string
	Env     []Pair
	// URL and Headers reach an http or sse server.
	URL     string
	Headers []Pair
}

// Parse decodes and checks one ACP McpServer object.
func Parse(raw json.RawMessage) (Server, error) {
	var w struct {
		Type    *string `json:"type"`
		Name    string  `json:"name"`
		Command string  `json:"command"`
		Args    []string
		Env     []Pair
		URL     string `json:"url"`
		Headers []Pair `json:"headers"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return Server{}, fmt.Errorf("malformed MCP server: %w", err)
	}
	s := Server{Name: w.Name, Transport: Stdio, Command: w.Command, Args: w.Args, Env: w.Env, URL: w.URL, Headers: w.Headers}
	if w.Type != nil {
		s.Transport = Transport(*w.Type)
	}
	if strings.TrimSpace(s.Name) == "" {
		return Server{}, errors.New("MCP server without a name")
	}
	switch s.Transport {
	case Stdio:
		if !strings.HasPrefix(s.Command, "/") {
			return Server{}, fmt.Errorf("MCP server %q: command must be an absolute path: %q", s.Name, s.Command)
		}
	case HTTP, SSE:
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Server{}, fmt.Errorf("MCP server %q: url must be an http(s) URL: %q", s.Name, s.URL)
		}
	default:
		return Server{}, fmt.Errorf("MCP server %q: unsupported transport %q (stdio, http and sse are)", s.Name, s.Transport)
	}
	return s, nil
}

// ToolName is the model-facing name of a server's tool:
// mcp__<server>__<tool>, with every character outside [A-Za-z0-9_-]
// replaced by "_" (model APIs accept no others) and cut to 64 bytes.
func ToolName(server, tool string) string {
	n := "mcp__" + clean(server) + "__" + clean(tool)
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}
