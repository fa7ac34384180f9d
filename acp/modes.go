package acp

import (
	"context"
	"encoding/json"
)

// modeState returns the modes object for a session, or nil when modes are
// not composed.
func (s *Server) modeState(sess ModeSwitcher) *SessionModeState {
	ids, ok := sess.Modes()
	if !ok {
		return nil
	}
	st := &SessionModeState{CurrentModeID: sess.Mode()}
	for _, id := range ids {
		m := SessionMode{ID: id, Name: id}
		if s.opts.EditorConfig {
			c := modeChoice(sess, id)
			m.Name, m.Description = c.name, c.description
		}
		st.AvailableModes = append(st.AvailableModes, m)
	}
	return st
}

// modeNamer is a session that names its modes for editors (the agent's
// mode definitions carry the names).
type modeNamer interface {
	ModeName(id string) (name, description string)
}

// modeChoice names a mode for the editor: as the session's mode
// definitions name it, else by its id.
func modeChoice(sess ModeSwitcher, id string) choice {
	if n, ok := sess.(modeNamer); ok {
		name, desc := n.ModeName(id)
		return choice{value: id, name: name, description: desc}
	}
	return choice{value: id, name: id}
}

// setMode handles session/set_mode (acp-bridge § 8): the switch is held
// until the next flush point, and the client is told at once.
func (s *Server) setMode(_ context.Context, params json.RawMessage) (any, error) {
	var req SetModeRequest
	if err := decode(params, &req); err != nil {
		return nil, err
	}
	ls, err := s.lookup(req.SessionID)
	if err != nil {
		return nil, err
	}
	if err := s.switchMode(ls, req.ModeID); err != nil {
		return nil, err
	}
	// The mode is a config option too: keep that picker in step.
	s.optionChanged(ls, optionMode, req.ModeID)
	return struct{}{}, nil
}

// switchMode holds a mode switch and tells the client at once (always,
// even when the mode is already current).
func (s *Server) switchMode(ls *binding, id string) error {
	if _, ok := ls.s.Modes(); !ok {
		return invalidParams("session modes are not composed in this deployment")
	}
	if err := ls.s.SetMode(id); err != nil {
		return invalidParams("%s", err.Error())
	}
	s.mu.Lock()
	ls.lastMode = id
	s.mu.Unlock()
	s.notify("session/update", SessionNotification{SessionID: ls.s.ID(), Update: CurrentModeUpdate{UpdateCurrentMode, id}})
	return nil
}

// modeChanged re-announces a logged mode the client was not told about.
func (s *Server) modeChanged(ls *binding, mode string) {
	defer s.optionChanged(ls, optionMode, mode)
	s.mu.Lock()
	if ls.lastMode == mode {
		s.mu.Unlock()
		return
	}
	ls.lastMode = mode
	s.mu.Unlock()
	s.notify("session/update", SessionNotification{SessionID: ls.s.ID(), Update: CurrentModeUpdate{UpdateCurrentMode, mode}})
}
