package acp_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/acp"
)

// keyAuth is an EnvAuth whose key is there while present is true, with
// the terminal sign-in and a logout that forgets the key.
func keyAuth(present *atomic.Bool, logouts *atomic.Int32) *acp.EnvAuth {
	return &acp.EnvAuth{Var: "DEEPSEEK_API_KEY", Present: present.Load,
		Login: &acp.TerminalLogin{Command: "/opt/dsh-acp/dsh-acp", Args: []string{"--login"}},
		Logout: func() error {
			logouts.Add(1)
			present.Store(false)
			return nil
		}}
}

type initResult struct {
	AgentCapabilities struct {
		Auth *struct {
			Logout *struct{} `json:"logout"`
		} `json:"auth"`
	} `json:"agentCapabilities"`
	AuthMethods []map[string]any `json:"authMethods"`
}

func initialize(t *testing.T, h *acp.Harness, caps string) initResult {
	t.Helper()
	f, _ := h.Call("initialize", `{"protocolVersion":1,"clientCapabilities":`+caps+`}`)
	require.Nil(t, f.Error)
	var r initResult
	require.NoError(t, json.Unmarshal(f.Result, &r))
	return r
}

// The terminal sign-in is advertised only to a client that enabled it
// (AuthMethodTerminal: MUST), in the ACP form (type terminal, args) or in
// the older _meta["terminal-auth"] form (a command to run); env_var stays
// for every client. Every frame is validated against the ACP schema by
// the harness.
func TestTerminalAuthAdvertisedToClientsThatRunIt(t *testing.T) {
	var present atomic.Bool
	var logouts atomic.Int32
	for _, c := range []struct {
		name, caps string
		want       []string // the methods' types ("" for an agent method with _meta)
	}{
		{"none", `{}`, []string{"env_var"}},
		{"auth without terminal", `{"auth":{}}`, []string{"env_var"}},
		{"terminal false", `{"auth":{"terminal":false}}`, []string{"env_var"}},
		{"terminal", `{"auth":{"terminal":true}}`, []string{"terminal", "env_var"}},
		{"meta", `{"_meta":{"terminal-auth":true}}`, []string{"meta", "env_var"}},
		{"both", `{"auth":{"terminal":true},"_meta":{"terminal-auth":true}}`, []string{"terminal", "env_var"}},
		{"malformed auth", `{"auth":{"terminal":"yes"}}`, []string{"env_var"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := fakeHarness(t, acp.Options{EnvAuth: keyAuth(&present, &logouts)})
			r := initialize(t, h, c.caps)
			var got []string
			for _, m := range r.AuthMethods {
				switch {
				case m["_meta"] != nil:
					got = append(got, "meta")
					ta := m["_meta"].(map[string]any)["terminal-auth"].(map[string]any)
					assert.Equal(t, "/opt/dsh-acp/dsh-acp", ta["command"])
					assert.Equal(t, []any{"--login"}, ta["args"])
					assert.Equal(t, "deepseek-login", m["id"])
				default:
					got = append(got, m["type"].(string))
				}
				if m["type"] == "terminal" {
					assert.Equal(t, []any{"--login"}, m["args"])
					assert.Equal(t, "deepseek-login", m["id"])
					assert.NotEmpty(t, m["name"])
				}
			}
			assert.Equal(t, c.want, got)
			require.NotNil(t, r.AgentCapabilities.Auth, "logout is advertised")
			assert.NotNil(t, r.AgentCapabilities.Auth.Logout)
		})
	}
}

// Without a key a prompt answers auth_required (-32000) before any turn
// runs, its data listing the methods a client can offer; once a key is
// there (signed in meanwhile: Present is asked again) the prompt runs.
// logout forgets the key: the next prompt is auth_required again.
func TestPromptWithoutKeyIsAuthRequired(t *testing.T) {
	var present atomic.Bool
	var logouts atomic.Int32
	h, fa := fakeHarness(t, acp.Options{EnvAuth: keyAuth(&present, &logouts)})
	initialize(t, h, `{"auth":{"terminal":true}}`)
	f, _ := h.Call("session/new", `{"cwd":`+acp.JSONQuote(t.TempDir())+`,"mcpServers":[]}`)
	require.NotNil(t, f.Error, "session/new asks a client that runs auth methods to sign in first")
	assert.Equal(t, acp.CodeAuthRequired, f.Error.Code)
	present.Store(true)
	sid := h.NewSession(t.TempDir())
	present.Store(false) // the key went (a logout in another window)

	f, _ = h.Call("session/prompt", acp.PromptParams(sid, "hi"))
	require.NotNil(t, f.Error)
	var data struct {
		AuthMethods []map[string]any `json:"authMethods"`
	}
	require.NoError(t, json.Unmarshal(f.Error.Data, &data))
	assert.Equal(t, acp.CodeAuthRequired, f.Error.Code)
	assert.Contains(t, f.Error.Message, "--login")
	require.Len(t, data.AuthMethods, 2)
	assert.Equal(t, "terminal", data.AuthMethods[0]["type"])
	assert.Empty(t, fa.Session(t, sid).Prompts(), "no turn ran")

	// authenticate with either method says the same while no key is there.
	for _, id := range []string{"deepseek-login", "api-key"} {
		f, _ = h.Call("authenticate", `{"methodId":"`+id+`"}`)
		require.NotNil(t, f.Error, id)
		assert.Equal(t, acp.CodeAuthRequired, f.Error.Code, id)
	}

	present.Store(true) // signed in from a terminal
	f, _ = h.Call("authenticate", `{"methodId":"deepseek-login"}`)
	require.Nil(t, f.Error)
	f, _ = h.Call("session/prompt", acp.PromptParams(sid, "hi"))
	require.Nil(t, f.Error)
	assert.Equal(t, []string{"hi"}, fa.Session(t, sid).Prompts())

	f, _ = h.Call("logout", `{}`)
	require.Nil(t, f.Error)
	assert.JSONEq(t, `{}`, string(f.Result))
	assert.Equal(t, int32(1), logouts.Load())
	f, _ = h.Call("session/prompt", acp.PromptParams(sid, "again"))
	require.NotNil(t, f.Error)
	assert.Equal(t, acp.CodeAuthRequired, f.Error.Code)
}

// An agent without a stored key to forget does not offer logout, and
// answers it method_not_found; nor does upstream's form (no EnvAuth).
func TestLogoutOnlyWhenSupported(t *testing.T) {
	var present atomic.Bool
	present.Store(true)
	h, _ := fakeHarness(t, acp.Options{EnvAuth: &acp.EnvAuth{Var: "DEEPSEEK_API_KEY", Present: present.Load}})
	r := initialize(t, h, `{"auth":{"terminal":true}}`)
	assert.Nil(t, r.AgentCapabilities.Auth)
	require.Len(t, r.AuthMethods, 1, "no terminal method without a sign-in")
	f, _ := h.Call("logout", `{}`)
	require.NotNil(t, f.Error)
	assert.Equal(t, acp.CodeMethodNotFound, f.Error.Code)

	h, _ = fakeHarness(t, acp.Options{})
	r = initialize(t, h, `{"auth":{"terminal":true}}`)
	assert.Empty(t, r.AuthMethods)
	f, _ = h.Call("logout", `{}`)
	require.NotNil(t, f.Error)
	assert.Equal(t, acp.CodeMethodNotFound, f.Error.Code)
}
