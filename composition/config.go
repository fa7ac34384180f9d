package composition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// UserConfig is the user's configuration file (docs/configuration.md).
// Zero fields keep the composition's defaults.
type UserConfig struct {
	// Composition names the composition to serve when --composition is not
	// given.
	Composition string `json:"composition,omitempty"`
	// Model overrides the model id.
	Model string `json:"model,omitempty"`
	// Models lists the models the Model menu offers, with what each can
	// take (default: the provider's GET /models).
	Models []ModelConfig `json:"models,omitempty"`
	// BaseURL is the OpenAI-compatible API root (default DeepSeek's).
	BaseURL string `json:"baseURL,omitempty"`
	// APIKeyEnv names the environment variable holding the API key
	// (default DEEPSEEK_API_KEY).
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// Sandbox is the default sandbox mode.
	Sandbox sandbox.Mode `json:"sandbox,omitempty"`
	// Approval is the default approval policy.
	Approval approval.Policy `json:"approval,omitempty"`
	// Store is "jsonl" (default) or "sqlite".
	Store string `json:"store,omitempty"`
	// SessionsRoot is where session logs live.
	SessionsRoot string `json:"sessionsRoot,omitempty"`
	// MaxSteps caps the model calls of one turn (default 100).
	MaxSteps int `json:"maxSteps,omitempty"`
	// Network tunes the model client's timeouts and retries.
	Network NetworkConfig `json:"network,omitzero"`
	// Limits bounds what the editor may send.
	Limits LimitsConfig `json:"limits,omitzero"`
	// Env tunes which environment variables reach commands.
	Env EnvConfig `json:"env,omitzero"`
	// Containment tunes what confined commands are kept from: the
	// Network option's default, further secrets and protected paths
	// (added to the built-in lists).
	Containment Containment `json:"containment,omitzero"`
	// Delegation bounds the child agents of each session.
	Delegation DelegationConfig `json:"delegation,omitzero"`
}

// DelegationConfig bounds, per session, the child agents it and all its
// descendants start (subagents, forks, workflow children, background
// subagents) (docs/configuration.md). Zero fields keep the defaults; a
// negative one turns that ceiling off. Compositions that mirror upstream
// have none.
type DelegationConfig struct {
	// MaxLiveChildren caps the child agents running at once (default 32).
	MaxLiveChildren int `json:"maxLiveChildren,omitempty"`
	// MaxChildrenPerTurn caps the child agents started in one turn
	// (default 200).
	MaxChildrenPerTurn int `json:"maxChildrenPerTurn,omitempty"`
	// MaxModelCallsPerTurn caps the model calls of the session and all
	// its child agents in one turn (default 1000).
	MaxModelCallsPerTurn int `json:"maxModelCallsPerTurn,omitempty"`
}

// The default delegation ceilings of the compositions that do not mirror
// upstream.
const (
	DefaultMaxLiveChildren      = 32
	DefaultMaxChildrenPerTurn   = 200
	DefaultMaxModelCallsPerTurn = 1000
)

// limits is the agent's setting: the defaults where d is zero, no
// ceiling where it is negative.
func (d DelegationConfig) limits() agent.Delegation {
	pick := func(v, def int) int {
		switch {
		case v < 0:
			return 0
		case v == 0:
			return def
		}
		return v
	}
	return agent.Delegation{MaxLive: pick(d.MaxLiveChildren, DefaultMaxLiveChildren),
		MaxPerTurn:    pick(d.MaxChildrenPerTurn, DefaultMaxChildrenPerTurn),
		MaxModelCalls: pick(d.MaxModelCallsPerTurn, DefaultMaxModelCallsPerTurn)}
}

// EnvConfig says which environment variables commands get
// beyond the built-in rule, which drops every secret-looking name
// (docs/security.md). Patterns are case-insensitive globs.
type EnvConfig struct {
	// Pass are names passed although they look like secrets (wins).
	Pass []string `json:"pass,omitempty"`
	// Strip are further names never passed.
	Strip []string `json:"strip,omitempty"`
}

// NetworkConfig tunes the model client (docs/configuration.md). Zero
// fields keep the defaults; a negative timeout turns that timeout off.
type NetworkConfig struct {
	// ConnectTimeoutSec bounds dialing and the TLS handshake (default 10).
	ConnectTimeoutSec float64 `json:"connectTimeoutSec,omitempty"`
	// HeaderTimeoutSec bounds the wait for the response headers (default 60).
	HeaderTimeoutSec float64 `json:"headerTimeoutSec,omitempty"`
	// IdleTimeoutSec bounds the silence between streamed chunks (default 90).
	IdleTimeoutSec float64 `json:"idleTimeoutSec,omitempty"`
	// DataIdleTimeoutSec bounds, once the answer began streaming, the wait
	// for its next data; keep-alive comments do not count (default 120).
	DataIdleTimeoutSec float64 `json:"dataIdleTimeoutSec,omitempty"`
	// MaxRetries is how often a failed call is retried before any output
	// (default 4; negative: never).
	MaxRetries int `json:"maxRetries,omitempty"`
	// RetryBudgetSec bounds the time spent retrying one call (default 120).
	RetryBudgetSec float64 `json:"retryBudgetSec,omitempty"`
}

// ConnectTimeout is ConnectTimeoutSec as a duration (0: the default).
func (n NetworkConfig) ConnectTimeout() time.Duration { return seconds(n.ConnectTimeoutSec) }

// HeaderTimeout is HeaderTimeoutSec as a duration (0: the default).
func (n NetworkConfig) HeaderTimeout() time.Duration { return seconds(n.HeaderTimeoutSec) }

// IdleTimeout is IdleTimeoutSec as a duration (0: the default).
func (n NetworkConfig) IdleTimeout() time.Duration { return seconds(n.IdleTimeoutSec) }

// DataIdleTimeout is DataIdleTimeoutSec as a duration (0: the default).
func (n NetworkConfig) DataIdleTimeout() time.Duration { return seconds(n.DataIdleTimeoutSec) }

// RetryBudget is RetryBudgetSec as a duration (0: the default).
func (n NetworkConfig) RetryBudget() time.Duration { return seconds(n.RetryBudgetSec) }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// LimitsConfig bounds the editor's input (docs/reliability.md). Zero
// fields keep the defaults.
type LimitsConfig struct {
	// MaxLineBytes bounds one JSON-RPC message (default 16 MiB).
	MaxLineBytes int `json:"maxLineBytes,omitempty"`
	// MaxPromptBytes bounds the text of one prompt (default 4 MiB).
	MaxPromptBytes int `json:"maxPromptBytes,omitempty"`
	// MaxToolArgBytes bounds the streamed arguments of one tool call
	// (default 8 MiB).
	MaxToolArgBytes int `json:"maxToolArgBytes,omitempty"`
}

// DefaultAPIKeyEnv is the variable the API key is read from by default.
const DefaultAPIKeyEnv = "DEEPSEEK_API_KEY"

// ConfigPath returns the user config file location:
// $DSH_ACP_CONFIG, else $XDG_CONFIG_HOME/dsh-acp/config.json, else
// ~/.config/dsh-acp/config.json.
func ConfigPath(getenv func(string) string) string {
	if p := getenv("DSH_ACP_CONFIG"); p != "" {
		return p
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "dsh-acp", "config.json")
	}
	return filepath.Join(getenv("HOME"), ".config", "dsh-acp", "config.json")
}

// DefaultSessionsRoot returns $XDG_STATE_HOME/dsh-acp/sessions, else
// ~/.local/state/dsh-acp/sessions.
func DefaultSessionsRoot(getenv func(string) string) string {
	if x := getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "dsh-acp", "sessions")
	}
	return filepath.Join(getenv("HOME"), ".local", "state", "dsh-acp", "sessions")
}

// LoadUserConfig reads the config file at path. A missing file is an empty
// config; a malformed one is an error naming the file.
func LoadUserConfig(path string) (UserConfig, error) {
	var c UserConfig
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read config %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	switch c.Store {
	case "", "jsonl", "sqlite":
	default:
		return c, fmt.Errorf("config %s: store must be \"jsonl\" or \"sqlite\", got %q", path, c.Store)
	}
	return c, nil
}

// Apply overlays the user's settings on a composition. Compositions that
// mirror upstream keep their settings, so their wire stays exact.
func (c Composition) Apply(u UserConfig) (Composition, error) {
	if c.Upstream {
		return c, nil
	}
	if u.Model != "" {
		c.Model = u.Model
	}
	if u.Sandbox != "" {
		c.Sandbox = u.Sandbox
	}
	if u.Approval != "" {
		c.Approval = u.Approval
	}
	if k := c.Containment; k != nil {
		merged := *k
		if u.Containment.Network != "" {
			merged.Network = u.Containment.Network
		}
		merged.Secrets = append(slices.Clone(k.Secrets), u.Containment.Secrets...)
		merged.Protected = append(slices.Clone(k.Protected), u.Containment.Protected...)
		c.Containment = &merged
	}
	c.EnvPass = append(append([]string(nil), c.EnvPass...), u.Env.Pass...)
	c.EnvStrip = append(append([]string(nil), c.EnvStrip...), u.Env.Strip...)
	return c, c.Validate()
}
