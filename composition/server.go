package composition

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/bash"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/session"
)

// ServerOptions are the injected parts of a server: the model, the store,
// the clock and the id source.
type ServerOptions struct {
	Provider llm.Provider
	Store    session.Store
	Clock    session.Clock
	NewID    func() string
	Log      zerolog.Logger
	// Version is the agent version advertised in initialize.
	Version string
	// LaunchDir is the directory relative config paths (hook files)
	// resolve against; the process working directory when empty.
	LaunchDir string
	// Confiner confines bash commands (sandbox.Provider); nil makes every
	// confined command fail closed.
	Confiner bash.Confiner
	// Programs runs run_code programs and workflow scripts in worker
	// processes (nil: a pool of the worker found beside the executable,
	// confined by Confiner).
	Programs *jsworker.Pool
	// MaxSteps caps the model calls of one turn (zero: agent.DefaultMaxSteps).
	MaxSteps int
	// Limits bounds the editor's input (zero fields: the defaults).
	Limits LimitsConfig
	// Delegation bounds each session's child agents (zero fields: the
	// defaults; upstream compositions have no ceilings).
	Delegation DelegationConfig
	// Auth is the API key variable to advertise as an env_var auth
	// method (nil: none; upstream compositions never advertise one).
	Auth *acp.EnvAuth
	// Models are the user's configured models (UserConfig.Models).
	Models []ModelConfig
	// ListModels lists the provider's models for the Model menu when none
	// are configured (nil: only the composition's model is offered).
	ListModels ModelLister
	// Getenv reads the environment that locates the user's files (HOME,
	// XDG_STATE_HOME, CLAUDE_CONFIG_DIR, CODEX_HOME); nil means os.Getenv.
	Getenv func(string) string
	// CheckDerivation makes every step compare the session's incremental
	// request state with a full re-derivation from its log
	// (agent.Config.CheckDerivation); the replay harness sets it.
	CheckDerivation bool
	// AfterInitialize is the process's start-up work to run once the
	// first initialize answer is written (acp.Options.AfterInitialize).
	AfterInitialize func()
}

// NewServer wires an ACP bridge serving this composition.
func (c Composition) NewServer(o ServerOptions) *acp.Server {
	if o.Clock == nil {
		o.Clock = session.WallClock
	}
	if o.NewID == nil {
		o.NewID = session.NewID
	}
	var closePrograms func() // the pool made here closes with the runtime
	if o.Programs == nil {
		// No worker starts before the first program.
		var confiner jsworker.Confiner
		if o.Confiner != nil {
			confiner = o.Confiner
		}
		o.Programs = jsworker.NewPool(jsworker.Options{Confiner: confiner})
		closePrograms = o.Programs.Close
	}
	deps := Deps{Confiner: o.Confiner, LaunchDir: o.LaunchDir, Getenv: o.Getenv, Programs: o.Programs}
	var approvals *approval.Service
	if c.Approval != "" {
		approvals = approval.NewService(c.Approval, o.NewID)
		deps.Approver = approvals
	}
	var (
		catalog *modelCatalog
		grants  *grantStore
		consent *consentStore
	)
	commands := c.Commands()
	if !c.Upstream {
		getenv := o.getenv()
		catalog = newModelCatalog(o.Models, o.ListModels, func(err error) {
			o.Log.Warn().Err(err).Msg("the Model menu offers only the configured model")
		})
		// Loaded now, before any command runs: what changes in them later
		// behind this process's back is not honoured (trustedFile).
		grants = newGrantStore(filepath.Join(stateDir(getenv), "permissions.json"), o.Log)
		consent = newConsentStore(filepath.Join(stateDir(getenv), "hook-consent.json"), o.Log)
		commands = append(commands, c.editorCommands(catalog, grants, consent)...)
	}
	rt := agent.NewRuntime(agent.Config{
		Model:    c.Model,
		Provider: o.Provider,
		Store:    o.Store,
		Clock:    o.Clock,
		NewID:    o.NewID,
		Tools:    func(env capabilities.Env) *capabilities.Registry { return c.Registry(env, deps) },
		Sections: c.Sections(),
		Log:      o.Log,

		SandboxDefault: c.Sandbox,
		NetworkDefault: c.networkDefault(),
		Approval:       approvals,
		Modes:          c.ModeDefs(),
		Commands:       commands,
		DurableKnobs:   !c.Upstream,
		ModelKnobs:     !c.Upstream,
		// Editor users switch code mode per session (native by default).
		ToolModeKnob: !c.Upstream && c.Has(FamilyRunCode) && c.ToolMode == "",
		// A model that keeps delegating stops three levels down.
		MaxChildDepth: maxChildDepth(c),
		Delegation:    c.delegation(o.Delegation),
		MaxSteps:      o.MaxSteps,

		ParallelReads:      c.ParallelReads,
		RetryEmpty:         c.Hygiene,
		NoticeDroppedCalls: c.Hygiene,
		Compaction:         c.compaction(),
		MaxToolArgBytes:    o.Limits.MaxToolArgBytes,
		CheckDerivation:    o.CheckDerivation,
		OnClose:            closePrograms,
		// An editor's agent idles most of the time: what a turn freed goes
		// back to the system 2 s after the last one (docs/performance.md).
		ReleaseIdle: releaseIdle(c),
		Members:     c.members(o, approvals, consent),
	})
	var (
		models      func(context.Context) []acp.ModelChoice
		grantsOfACP acp.ProjectGrants
		prompts     func(string) []acp.PromptCommand
		auth        *acp.EnvAuth
	)
	if catalog != nil {
		models, grantsOfACP, prompts, auth = catalog.choices, grants, promptCommands(o.getenv()), o.Auth
	}
	srv := acp.NewServer(acp.FromRuntime(rt), acp.Options{
		Features:       c.features(),
		AgentName:      "dsh-acp",
		AgentVersion:   o.Version,
		AgentTitle:     c.agentTitle(),
		Models:         models,
		MCP:            c.mcpConnector(approvals, o),
		ContextWindow:  c.ContextWindow,
		Images:         !c.Upstream && acceptsImages(o.Models, c.Model),
		Grants:         grantsOfACP,
		PromptCommands: prompts,
		EnvAuth:        auth,
		MaxLineBytes:   o.Limits.MaxLineBytes,
		MaxPromptBytes: o.Limits.MaxPromptBytes,

		AfterInitialize: o.AfterInitialize,
	}, o.Log)
	if approvals != nil {
		approvals.AddAnswerer(srv)
	}
	return srv
}

// features is the bridge's feature set: upstream's exactly, or every one.
func (c Composition) features() acp.Features {
	if c.Upstream {
		return acp.UpstreamExact()
	}
	return acp.DefaultFeatures()
}

// delegation is the composition's delegation ceilings: none upstream
// (its contract has none), d with the defaults otherwise.
func (c Composition) delegation(d DelegationConfig) agent.Delegation {
	if c.Upstream {
		return agent.Delegation{}
	}
	return d.limits()
}

// networkDefault is the default of the Network option ("": no option).
func (c Composition) networkDefault() string {
	if c.Containment == nil || c.Sandbox == "" {
		return ""
	}
	if c.Containment.Network == "" {
		return agent.NetworkOff
	}
	return c.Containment.Network
}

// getenv is Getenv, else os.Getenv.
func (o ServerOptions) getenv() func(string) string {
	if o.Getenv == nil {
		return os.Getenv
	}
	return o.Getenv
}

// editorCommands are the default composition's slash commands besides
// /undo: /mode, /model, /clear-permissions and, with compaction, /compact.
func (c Composition) editorCommands(catalog *modelCatalog, grants *grantStore, consent *consentStore) []agent.Command {
	var out []agent.Command
	if c.Modes {
		out = append(out, agent.ModeCommand())
	}
	out = append(out, agent.ModelCommand(func(ctx context.Context) []string {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		var ids []string
		for _, m := range catalog.models(ctx) {
			ids = append(ids, m.ID)
		}
		return ids
	}))
	if c.Approval != "" {
		out = append(out, clearPermissionsCommand(grants, consent))
	}
	if c.compaction() != nil {
		out = append(out, agent.CompactCommand())
	}
	return out
}

// agentTitle is the name editors show for the agent (none upstream).
func (c Composition) agentTitle() string {
	if c.Upstream {
		return ""
	}
	return "dsh-acp (DeepSeek)"
}

// mcpConnector connects sessions to the editor's MCP servers (the default
// composition only: upstream rejects mcpServers).
func (c Composition) mcpConnector(approvals *approval.Service, o ServerOptions) acp.MCPConnector {
	if c.Upstream {
		return nil
	}
	return mcpConnector{approvals: approvals, version: o.Version, log: o.Log, env: c.envPolicy()}
}

// releaseIdle is the default composition's idle release delay; the
// upstream compositions keep the runtime's own scavenging.
func releaseIdle(c Composition) time.Duration {
	if c.Upstream {
		return 0
	}
	return 2 * time.Second
}
