package acp

import (
	"encoding/json"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// CodeAuthRequired is ACP's auth_required error.
const CodeAuthRequired = -32000

// EnvAuth is an API key the agent reads from its environment
// (Options.EnvAuth): advertised as an env_var auth method.
type EnvAuth struct {
	// Var names the variable (DEEPSEEK_API_KEY).
	Var string
	// Present reports whether the key is set.
	Present func() bool
}

// authMethodID is the id of the env_var method.
const authMethodID = "api-key"

// envVarMethod is the advertised method: an AuthMethodAgent (id, name,
// description) typed env_var with the variable's name, so a client that
// knows env_var methods shows how to set it and one that does not can
// still call authenticate.
type envVarMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Type        string `json:"type"`
	VarName     string `json:"varName"`
}

// authMethods lists the advertised auth methods (upstream: none).
func (s *Server) authMethods() []json.RawMessage {
	a := s.opts.EnvAuth
	if a == nil {
		return []json.RawMessage{}
	}
	return []json.RawMessage{jsonx.MustMarshal(envVarMethod{ID: authMethodID, Name: "DeepSeek API key",
		Description: "Set " + a.Var + " in the environment the agent runs in (in Zed: the \"env\" of its agent_servers entry), then restart the agent.",
		Type:        "env_var", VarName: a.Var})}
}

// AuthenticateRequest is the params of authenticate.
type AuthenticateRequest struct {
	MethodID string `json:"methodId"`
}

// authenticate answers {} when the key is there (the agent reads it from
// its environment; nothing else to do), else auth_required saying what to
// set.
func (s *Server) authenticate(params json.RawMessage) (any, error) {
	a := s.opts.EnvAuth
	if a == nil {
		return struct{}{}, nil
	}
	var req AuthenticateRequest
	if err := decode(params, &req); err != nil {
		return nil, err
	}
	if req.MethodID != authMethodID {
		id, _ := marshal(req.MethodID)
		return nil, invalidParams("unknown auth method %s; the agent offers %q", id, authMethodID)
	}
	return struct{}{}, s.requireKey()
}

// requireKey is auth_required while the key is missing.
func (s *Server) requireKey() error {
	a := s.opts.EnvAuth
	if a == nil || a.Present == nil || a.Present() {
		return nil
	}
	return &Error{Code: CodeAuthRequired, Message: "Authentication required: set " + a.Var +
		" in the environment the agent runs in (in Zed: the \"env\" of its agent_servers entry) and restart the agent"}
}
