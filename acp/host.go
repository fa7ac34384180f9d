package acp

import (
	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/capabilities"
)

// sessionOptions is what a new or reopened session is given: its cwd and
// extra roots, what the client hosts for it, and the announcement of its
// child agents.
func (s *Server) sessionOptions(cwd string, roots []string) agent.SessionOptions {
	return agent.SessionOptions{Cwd: cwd, Roots: roots, Host: s.hostFor,
		OnSpawn: func(parent, child *agent.Session, title string) { s.Spawned(parent.ID(), child, title) }}
}

// hostFor returns what the client hosts for session id: questions to its
// user, its terminals and its files (each when it advertised them and the
// composition uses them), and nil fields for everything served locally.
func (s *Server) hostFor(id string) *capabilities.Host {
	return &capabilities.Host{Asker: s, Terminals: s.clientTerminals(id), Files: s.clientFiles(id), Live: s.liveFor(id)}
}
