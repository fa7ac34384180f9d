package acp

import "github.com/dsh-acp/dsh-acp/capabilities"

// clientTerminals returns the client's terminals for session id, or nil
// when commands run locally.
func (s *Server) clientTerminals(id string) capabilities.Terminals {
	_ = id
	return nil
}
