package acp

import "encoding/json"

// setConfigOption handles session/set_config_option. No composition mounts
// a config option yet, so every id is unknown.
func (s *Server) setConfigOption(params json.RawMessage) (any, error) {
	var req SetConfigOptionRequest
	if err := decode(params, &req); err != nil {
		return nil, err
	}
	if _, err := s.lookup(req.SessionID); err != nil {
		return nil, err
	}
	var str string
	if json.Unmarshal(req.Value, &str) != nil {
		return nil, invalidParams("config option %s is a select; boolean values are not accepted", req.ConfigID)
	}
	id, _ := marshal(req.ConfigID)
	return nil, invalidParams("unknown config option %s", id)
}

// setMode handles session/set_mode.
func (s *Server) setMode(params json.RawMessage) (any, error) {
	var req SetModeRequest
	if err := decode(params, &req); err != nil {
		return nil, err
	}
	if _, err := s.lookup(req.SessionID); err != nil {
		return nil, err
	}
	if !s.opts.ModesComposed {
		return nil, invalidParams("session modes are not composed in this deployment")
	}
	return nil, invalidParams("unknown mode %q — available modes: default", req.ModeID)
}
