package acp

import (
	"context"
	"encoding/json"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// CodeAuthRequired is ACP's auth_required error.
const CodeAuthRequired ErrorCode = -32000

// EnvAuth is the agent's API key (Options.EnvAuth): read from the
// environment, or signed in from a terminal and kept in a credential
// store. It is advertised as an env_var auth method, and as a terminal
// one (AuthMethodTerminal) to a client that runs those.
type EnvAuth struct {
	// Var names the variable (DEEPSEEK_API_KEY).
	Var string
	// Present reports whether a key is there now (the environment's, or
	// a stored one: asked again each time, as a sign-in in a terminal
	// may have stored one meanwhile).
	Present func() bool
	// Login is the sign-in a person runs in a terminal; nil: no terminal
	// method is advertised.
	Login *TerminalLogin
	// Logout forgets the stored key (ACP logout); nil: logout is not
	// advertised.
	Logout func() error
}

// TerminalLogin is how a client runs the agent's interactive sign-in.
type TerminalLogin struct {
	// Command is the agent's executable, absolute (for clients of the
	// older _meta["terminal-auth"] form, which run a command of their own).
	Command string
	// Args are appended to the agent's invocation (["--login"]).
	Args []string
}

// The advertised methods' ids.
const (
	authMethodID  = "api-key"
	loginMethodID = "deepseek-login"
)

// terminalAuthMeta is the key of the older terminal-auth extension, in
// the client's capabilities and in a method's _meta.
const terminalAuthMeta = "terminal-auth"

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

// terminalMethod is an AuthMethodTerminal: the client runs the agent with
// Args in a terminal; exit status 0 means signed in.
type terminalMethod struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Type        string   `json:"type"`
	Args        []string `json:"args"`
}

// metaTerminalMethod is the same sign-in in the older form: an agent
// method whose _meta["terminal-auth"] names the command to run.
type metaTerminalMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Meta        struct {
		TerminalAuth struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
			Label   string   `json:"label"`
		} `json:"terminal-auth"`
	} `json:"_meta"`
}

// The terminal sign-in's wording.
const (
	loginName        = "Sign in with a DeepSeek API key"
	loginDescription = "Opens a terminal that asks for your DeepSeek API key (create one at platform.deepseek.com), checks it with DeepSeek and stores it in your system's credential store."
)

// clientAuth is what the client said at initialize about auth methods.
type clientAuth struct {
	terminal     bool // AuthCapabilities.terminal
	metaTerminal bool // _meta["terminal-auth"]: true
}

// readClientAuth reads the client's auth capabilities.
func readClientAuth(c ClientCapabilities) clientAuth {
	var a clientAuth
	if len(c.Auth) > 0 {
		var caps struct {
			Terminal bool `json:"terminal"`
		}
		// x-deserialize-default-on-error: a malformed value is false.
		_ = json.Unmarshal(c.Auth, &caps)
		a.terminal = caps.Terminal
	}
	if raw, ok := c.Meta[terminalAuthMeta]; ok {
		a.metaTerminal = string(raw) == "true"
	}
	return a
}

// authMethods lists the advertised auth methods (upstream: none): the
// terminal sign-in first when the client runs it (the ACP form wins over
// the older one), then the environment variable.
func (s *Server) authMethods() []json.RawMessage {
	a := s.opts.EnvAuth
	if a == nil {
		return []json.RawMessage{}
	}
	s.mu.Lock()
	ca := s.clientAuth
	s.mu.Unlock()
	var methods []json.RawMessage
	if l := a.Login; l != nil {
		switch {
		case ca.terminal:
			methods = append(methods, jsonx.MustMarshal(terminalMethod{ID: loginMethodID, Name: loginName, Description: loginDescription,
				Type: "terminal", Args: l.Args}))
		case ca.metaTerminal && l.Command != "":
			m := metaTerminalMethod{ID: loginMethodID, Name: loginName, Description: loginDescription}
			m.Meta.TerminalAuth.Command, m.Meta.TerminalAuth.Args, m.Meta.TerminalAuth.Label = l.Command, l.Args, "DeepSeek sign-in"
			methods = append(methods, jsonx.MustMarshal(m))
		}
	}
	return append(methods, jsonx.MustMarshal(envVarMethod{ID: authMethodID, Name: "DeepSeek API key",
		Description: "Set " + a.Var + " in the environment the agent runs in (in Zed: the \"env\" of its agent_servers entry), then restart the agent.",
		Type:        "env_var", VarName: a.Var}))
}

// authCapabilities is agentCapabilities.auth: logout when the agent can
// forget a stored key.
func (s *Server) authCapabilities() *AgentAuthCapabilities {
	if s.opts.EnvAuth == nil || s.opts.EnvAuth.Logout == nil {
		return nil
	}
	return &AgentAuthCapabilities{Logout: &struct{}{}}
}

// AuthenticateRequest is the params of authenticate.
type AuthenticateRequest struct {
	MethodID string `json:"methodId"`
}

// authenticate answers {} when a key is there (the agent reads it from
// its environment or its credential store; nothing else to do), else
// auth_required saying how to provide one. The terminal sign-in's id is
// accepted too: clients of the older _meta form call authenticate with it
// once the sign-in ran.
func (s *Server) authenticate(_ context.Context, params json.RawMessage) (any, error) {
	a := s.opts.EnvAuth
	if a == nil {
		return struct{}{}, nil
	}
	var req AuthenticateRequest
	if err := decode(params, &req); err != nil {
		return nil, err
	}
	if req.MethodID != authMethodID && (a.Login == nil || req.MethodID != loginMethodID) {
		id, _ := marshal(req.MethodID)
		return nil, invalidParams("unknown auth method %s; the agent offers %q", id, authMethodID)
	}
	return struct{}{}, s.requireKey()
}

// logout forgets the stored key. A key in the environment stays: it is
// the launching client's to remove.
func (s *Server) logout(context.Context, json.RawMessage) (any, error) {
	if err := s.opts.EnvAuth.Logout(); err != nil {
		return nil, internalError("logout: %v", err)
	}
	return struct{}{}, nil
}

// requireKey is auth_required while no key is there; its data lists the
// auth methods of this connection, so that a client can offer them.
func (s *Server) requireKey() error {
	a := s.opts.EnvAuth
	if a == nil || a.Present == nil || a.Present() {
		return nil
	}
	how := "set " + a.Var + " in the environment the agent runs in (in Zed: the \"env\" of its agent_servers entry) and restart the agent"
	if a.Login != nil {
		how = "sign in (run dsh-acp --login in a terminal), or " + how
	}
	return &Error{Code: CodeAuthRequired, Message: "Authentication required: " + how,
		Data: jsonx.MustMarshal(struct {
			AuthMethods []json.RawMessage `json:"authMethods"`
		}{s.authMethods()})}
}
