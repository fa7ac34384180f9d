package acp

import "github.com/dsh-acp/dsh-acp/capabilities"

// hostFor returns what the client hosts for session id: its terminals
// (when it advertised them and the composition uses them), and nil
// fields for everything served locally.
func (s *Server) hostFor(id string) *capabilities.Host {
	h := &capabilities.Host{Terminals: s.clientTerminals(id)}
	if h.Terminals == nil && h.Files == nil && len(h.Roots) == 0 {
		return nil
	}
	return h
}
