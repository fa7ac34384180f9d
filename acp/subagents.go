package acp

import "github.com/dsh-acp/dsh-acp/session"

// SubagentUpdate is the subagent_update session update (unstable schema):
// the parent session announces a child session it created and owns. Child
// events then arrive on the same connection under the child's session id.
type SubagentUpdate struct {
	SessionUpdate UpdateKind `json:"sessionUpdate"`
	SessionID     string     `json:"sessionId"`
	Title         string     `json:"title,omitempty"`
	Cwd           string     `json:"cwd,omitempty"`
}

// Spawned is told of a child agent right after parent created it and
// before it runs. For a client that advertised the unstable subagents
// capability it announces the child on the parent's session
// (subagent_update) and streams the child's events as session/update
// notifications of the child's session id, rendered like any session's.
// Otherwise the child stays invisible on the wire (its progress shows on
// the parent's tool card).
func (s *Server) Spawned(parentID string, child Served, title string) {
	s.mu.Lock()
	on := s.subagents
	s.mu.Unlock()
	if !on {
		return
	}
	id, cwd := child.ID(), child.Log().Header().Cwd
	s.notify(MethodSessionUpdate, SessionNotification{SessionID: parentID,
		Update: SubagentUpdate{SessionUpdate: UpdateSubagent, SessionID: id, Title: title, Cwd: cwd}})
	p := newPresenter(child.Tools(), cwd, false, true)
	p.editor = s.opts.EditorCards
	child.Log().Subscribe(func(ev session.Event) {
		for _, u := range p.present(ev) {
			s.notify(MethodSessionUpdate, SessionNotification{SessionID: id, Update: u})
		}
	})
}
