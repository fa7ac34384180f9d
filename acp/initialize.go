package acp

import (
	"context"
	"encoding/json"
)

// initialize negotiates the protocol version and remembers the client's
// terminal_output capability for sessions created afterwards, and which
// auth methods it runs (a terminal sign-in only to a client that enables
// it, as AuthMethodTerminal requires).
func (s *Server) initialize(_ context.Context, params json.RawMessage) (any, error) {
	var req InitializeRequest
	if err := decode(params, &req); err != nil {
		return nil, err
	}
	terminal := false
	if raw, ok := req.ClientCapabilities.Meta["terminal_output"]; ok {
		terminal = string(raw) == "true"
	}
	s.mu.Lock()
	s.terminalOutput = terminal
	s.client = req.ClientCapabilities
	s.elicitation = req.ClientCapabilities.Elicitation != nil && req.ClientCapabilities.Elicitation.Form != nil
	s.authAware = len(req.ClientCapabilities.Auth) > 0 && string(req.ClientCapabilities.Auth) != "null"
	s.clientAuth = readClientAuth(req.ClientCapabilities)
	sub := req.ClientCapabilities.Subagents
	s.subagents = s.opts.EditorCards && len(sub) > 0 && string(sub) != "null"
	if sc := req.ClientCapabilities.Session; sc != nil {
		s.compaction = s.opts.EditorCards && len(sc.Compaction) > 0 && string(sc.Compaction) != "null"
	}
	s.mu.Unlock()
	var sc *SessionCapabilities
	if s.opts.ListSessions {
		sc = &SessionCapabilities{List: &struct{}{}}
	}
	if s.opts.ExtraRoots {
		if sc == nil {
			sc = &SessionCapabilities{}
		}
		sc.AdditionalDirectories = &struct{}{}
	}
	return InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentInfo:       Implementation{Name: s.opts.AgentName, Title: s.opts.AgentTitle, Version: s.opts.AgentVersion},
		AgentCapabilities: AgentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  PromptCapabilities{Image: s.opts.PromptContext && s.opts.Images, EmbeddedContext: s.opts.PromptContext},
			MCPCapabilities:     s.mcpCapabilities(),
			SessionCapabilities: s.lifecycleCapabilities(sc),
			Auth:                s.authCapabilities(),
		},
		AuthMethods: s.authMethods(),
	}, nil
}

// initialized starts, once, what waits for the first initialize answer:
// the agent's warm-up, then Options.AfterInitialize. They begin when the
// answer has left the queue for stdout (the client is not kept waiting
// for them), on a goroutine the teardown waits for.
func (s *Server) initialized() {
	s.started.Do(func() {
		s.work.Add(1)
		go func() {
			defer s.work.Done()
			_ = s.stream.Flush() // an error is the connection's, reported where it writes
			if w, ok := s.agent.(agentWarmer); ok {
				w.Warm()
			}
			if s.opts.AfterInitialize != nil {
				s.opts.AfterInitialize()
			}
		}()
	})
}
