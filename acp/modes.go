package acp

import (
	"encoding/json"
)

// modeState returns the modes object for a session, or nil when modes are
// not composed.
func modeState(s Session) *SessionModeState {
	ids, ok := s.Modes()
	if !ok {
		return nil
	}
	st := &SessionModeState{CurrentModeID: s.Mode()}
	for _, id := range ids {
		st.AvailableModes = append(st.AvailableModes, SessionMode{ID: id, Name: id})
	}
	return st
}

// setMode handles session/set_mode (acp-bridge § 8): the switch is held
// until the next flush point, and the client is told at once.
func (s *Server) setMode(params json.RawMessage) (any, error) {
	var req SetModeRequest
	if err := decode(params, &req); err != nil {
		return nil, err
	}
	ls, err := s.lookup(req.SessionID)
	if err != nil {
		return nil, err
	}
	if _, ok := ls.s.Modes(); !ok {
		return nil, invalidParams("session modes are not composed in this deployment")
	}
	if err := ls.s.SetMode(req.ModeID); err != nil {
		return nil, invalidParams("%s", err.Error())
	}
	s.mu.Lock()
	ls.lastMode = req.ModeID
	s.mu.Unlock()
	s.notify("session/update", SessionNotification{SessionID: req.SessionID, Update: CurrentModeUpdate{"current_mode_update", req.ModeID}})
	return struct{}{}, nil
}

// modeChanged re-announces a logged mode the client was not told about.
func (s *Server) modeChanged(ls *liveSession, mode string) {
	s.mu.Lock()
	if ls.lastMode == mode {
		s.mu.Unlock()
		return
	}
	ls.lastMode = mode
	s.mu.Unlock()
	s.notify("session/update", SessionNotification{SessionID: ls.s.ID(), Update: CurrentModeUpdate{"current_mode_update", mode}})
}
