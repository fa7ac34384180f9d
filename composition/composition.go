// Package composition says which capabilities a server mounts: the model,
// the tool families, the sandbox and approval defaults, modes and hooks.
// Five built-in compositions mirror upstream's example suites and must
// reproduce their wire exactly; "default" is what editor users get.
package composition

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/ask"
	"github.com/dsh-acp/dsh-acp/capabilities/bash"
	"github.com/dsh-acp/dsh-acp/capabilities/fs"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/capabilities/localfs"
	"github.com/dsh-acp/dsh-acp/capabilities/plan"
	"github.com/dsh-acp/dsh-acp/capabilities/subagent"
	"github.com/dsh-acp/dsh-acp/capabilities/todo"
	"github.com/dsh-acp/dsh-acp/capabilities/undo"
	"github.com/dsh-acp/dsh-acp/capabilities/workflow"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
)

// Family names a tool family a composition can mount.
type Family string

// Tool families a composition can mount.
const (
	FamilyFS       Family = "fs"       // read, write, edit
	FamilyBash     Family = "bash"     // bash and its background tools
	FamilyTodo     Family = "todo"     // todo_write
	FamilySubagent Family = "subagent" // subagent, subagent_fork
	FamilyWorkflow Family = "workflow" // workflow
	FamilyRunCode  Family = "run_code" // run_code
	FamilyPlan     Family = "plan"     // exit_plan_mode
	FamilyAsk      Family = "ask"      // ask_user_question
)

// Composition is one server configuration.
type Composition struct {
	// Name identifies the composition.
	Name string `json:"name"`
	// Model is the model id requests name.
	Model string `json:"model"`
	// Persona is the deployment prompt section; {{model}} and {{cwd}} are
	// interpolated per session.
	Persona string `json:"persona"`
	// Tools lists the mounted tool families.
	Tools []Family `json:"tools"`
	// Upstream keeps upstream's wire exactly (rejects client MCP servers,
	// advertises nothing beyond upstream).
	Upstream bool `json:"upstream,omitempty"`
	// Sandbox is the default sandbox mode of a confining bash executor
	// ("" = commands are not confined).
	Sandbox sandbox.Mode `json:"sandbox,omitempty"`
	// Approval is the default approval policy ("" = no approval service).
	Approval approval.Policy `json:"approval,omitempty"`
	// Modes mounts the default/plan mode service.
	Modes bool `json:"modes,omitempty"`
	// Hooks mounts the Claude Code and Codex hook bridges.
	Hooks bool `json:"hooks,omitempty"`
	// RepeatGuard mounts the repeat-tool guard (thresholds 3, 5, 8).
	RepeatGuard bool `json:"repeatGuard,omitempty"`
	// Undo mounts the edit journal's /undo command.
	Undo bool `json:"undo,omitempty"`
	// ToolMode is agent.ToolModeNative (default), ToolModeCode or
	// ToolModeBoth: how the upstream compositions' tools reach the model
	// (the default composition offers it as a knob instead).
	ToolMode string `json:"toolMode,omitempty"`
	// ContextWindow is the model's context window in tokens; positive
	// values turn on the editor's context meter (usage_update).
	ContextWindow int `json:"contextWindow,omitempty"`
	// Instructions puts the project's and the user's AGENTS.md /
	// CLAUDE.md into the system prompt.
	Instructions bool `json:"instructions,omitempty"`
	// SpillBytes is the tool result size above which the result is saved
	// to a spill file and the model gets a bounded view (0: never).
	SpillBytes int `json:"spillBytes,omitempty"`
	// ToolTimeouts gives every tool call a time budget (nil: none).
	ToolTimeouts *TimeoutsConfig `json:"toolTimeouts,omitempty"`
	// Web configures web_fetch and web_search.
	Web WebConfig `json:"web,omitzero"`
	// ParallelReads runs consecutive calls of one step to read-only tools
	// (each tool says whether it is) concurrently; Hygiene also retries an
	// empty answer once and says when a max-tokens cut dropped a tool call.
	ParallelReads bool `json:"parallelReads,omitempty"`
	Hygiene       bool `json:"hygiene,omitempty"`
	// CompactAt is the fraction of ContextWindow whose use makes the
	// agent summarise the older conversation before its next model call
	// (0: never); CompactMaxTokens bounds the summary.
	CompactAt        float64 `json:"compactAt,omitempty"`
	CompactMaxTokens int     `json:"compactMaxTokens,omitempty"`
	// EnvPass and EnvStrip are glob patterns of environment variable
	// names passed to commands although they look like secrets, and of
	// further names never passed (bash.EnvPolicy).
	EnvPass  []string `json:"envPass,omitempty"`
	EnvStrip []string `json:"envStrip,omitempty"`
	// Containment keeps confined commands off the network, out of secrets
	// and away from files that run code later (nil: upstream's file-write
	// confinement only). It needs Sandbox.
	Containment *Containment `json:"containment,omitempty"`
}

// DefaultModel is the model of every built-in composition.
const DefaultModel = "deepseek-v4-flash"

const codingPersona = "You are a coding assistant running on the {{model}} model. The user's project is at {{cwd}}; " +
	"that is your working directory.\n\nCheck your changes by running the code or its tests. Keep answers short and factual."

const sandboxPersona = "You are a coding assistant running on the {{model}} model, working in {{cwd}}. Shell commands run " +
	"inside a file sandbox; when one needs more access than the sandbox allows, ask for it with a justification."

// Builtin returns the named built-in composition.
func Builtin(name string) (Composition, bool) {
	acpAgent := Composition{Name: "acp-agent", Model: DefaultModel, Persona: codingPersona, Upstream: true, Hooks: true, RepeatGuard: true,
		Tools: []Family{FamilyFS, FamilyBash, FamilyTodo, FamilySubagent, FamilyWorkflow}}
	switch name {
	case "default":
		return Composition{Name: "default", Model: DefaultModel, Persona: codingPersona, Hooks: true, RepeatGuard: true, Undo: true, Modes: true,
			ContextWindow: 131072,
			Sandbox:       sandbox.WorkspaceWrite, Approval: approval.PolicyAsk,
			Instructions: true, SpillBytes: capabilities.DefaultSpillCap, ToolTimeouts: &defaultTimeouts,
			ParallelReads: true, Hygiene: true, CompactAt: agent.DefaultCompactThreshold, CompactMaxTokens: 4096,
			Containment: new(defaultContainment),
			Tools: []Family{FamilyFS, FamilyBash, FamilyTodo, FamilyPlan, FamilyAsk, FamilySubagent, FamilyWorkflow,
				FamilySearch, FamilyWeb, FamilySkills, FamilyRunCode}}, true
	case "acp-agent":
		return acpAgent, true
	case "acp-agent-code-mode":
		c := acpAgent
		c.Name, c.ToolMode = name, agent.ToolModeCode
		c.Tools = append(append([]Family{}, c.Tools...), FamilyRunCode)
		return c, true
	case "acp-agent-both-mode":
		c := acpAgent
		c.Name, c.ToolMode = name, agent.ToolModeBoth
		c.Tools = append(append([]Family{}, c.Tools...), FamilyRunCode)
		return c, true
	case "sandbox-acp-agent":
		return Composition{Name: name, Model: DefaultModel, Persona: sandboxPersona, Upstream: true,
			Sandbox: sandbox.ReadOnly, Approval: approval.PolicyAsk, Tools: []Family{FamilyBash}}, true
	case "plan-acp-agent":
		return Composition{Name: name, Model: DefaultModel, Persona: codingPersona, Upstream: true, Modes: true,
			Tools: []Family{FamilyFS, FamilyTodo, FamilyPlan}}, true
	}
	return Composition{}, false
}

// BuiltinNames lists the built-in compositions.
func BuiltinNames() []string {
	return []string{"default", "acp-agent", "acp-agent-code-mode", "acp-agent-both-mode", "sandbox-acp-agent", "plan-acp-agent"}
}

// Load resolves --composition: a built-in name, or a JSON file holding a
// Composition (which may name a built-in in "base" to start from).
func Load(nameOrFile string) (Composition, error) {
	if c, ok := Builtin(nameOrFile); ok {
		return c, nil
	}
	data, err := os.ReadFile(nameOrFile)
	if err != nil {
		return Composition{}, fmt.Errorf("composition %q is neither a built-in (%s) nor a readable file: %w",
			nameOrFile, strings.Join(BuiltinNames(), ", "), err)
	}
	var base struct {
		Base          string          `json:"base"`
		ParallelTools json.RawMessage `json:"parallelTools"`
	}
	if err := json.Unmarshal(data, &base); err != nil {
		return Composition{}, fmt.Errorf("composition file %s: %w", nameOrFile, err)
	}
	if base.ParallelTools != nil {
		return Composition{}, fmt.Errorf("composition file %s: parallelTools is gone: tools say whether they only read; set parallelReads to true or false", nameOrFile)
	}
	c := Composition{Model: DefaultModel, Persona: codingPersona}
	if base.Base != "" {
		b, ok := Builtin(base.Base)
		if !ok {
			return Composition{}, fmt.Errorf("composition file %s: unknown base %q", nameOrFile, base.Base)
		}
		c = b
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return Composition{}, fmt.Errorf("composition file %s: %w", nameOrFile, err)
	}
	if c.Name == "" {
		c.Name = nameOrFile
	}
	return c, c.Validate()
}

// Validate checks the composition's values.
func (c Composition) Validate() error {
	known := map[Family]bool{FamilyAsk: true, FamilyFS: true, FamilyBash: true, FamilyTodo: true, FamilySubagent: true, FamilyWorkflow: true, FamilyRunCode: true, FamilyPlan: true,
		FamilySearch: true, FamilyWeb: true, FamilySkills: true}
	for _, t := range c.Tools {
		if !known[t] {
			return fmt.Errorf("composition %s: unknown tool family %q", c.Name, t)
		}
	}
	if c.Sandbox != "" && !c.Sandbox.Valid() {
		return fmt.Errorf("composition %s: unknown sandbox mode %q", c.Name, c.Sandbox)
	}
	if c.Approval != "" && !c.Approval.Valid() {
		return fmt.Errorf("composition %s: unknown approval policy %q", c.Name, c.Approval)
	}
	switch c.ToolMode {
	case "", agent.ToolModeNative, agent.ToolModeCode, agent.ToolModeBoth:
	default:
		return fmt.Errorf("composition %s: unknown tool mode %q", c.Name, c.ToolMode)
	}
	if c.Model == "" {
		return fmt.Errorf("composition %s: model is empty", c.Name)
	}
	if k := c.Containment; k != nil {
		if c.Upstream {
			return fmt.Errorf("composition %s: containment is not part of upstream's contract", c.Name)
		}
		if k.Network != "" && k.Network != agent.NetworkOff && k.Network != agent.NetworkOn {
			return fmt.Errorf("composition %s: containment network must be %q or %q, got %q", c.Name, agent.NetworkOff, agent.NetworkOn, k.Network)
		}
		for _, p := range k.Protected {
			if _, err := filepath.Match(p, ""); err != nil || filepath.IsAbs(p) {
				return fmt.Errorf("composition %s: protected path %q must be a pattern relative to the workspace root", c.Name, p)
			}
		}
	}
	if err := c.envPolicy().Check(); err != nil {
		return fmt.Errorf("composition %s: %w", c.Name, err)
	}
	return nil
}

// Has reports whether the composition mounts a tool family.
func (c Composition) Has(family Family) bool {
	for _, t := range c.Tools {
		if t == family {
			return true
		}
	}
	return false
}

// Deps are the services tools reach through the composition.
type Deps struct {
	// Asker puts questions to the user's editor (nil: the session host's
	// asker).
	Asker capabilities.Asker
	// Approver asks the user to approve risky actions (nil: none).
	Approver bash.Approver
	// Confiner confines commands (nil: commands cannot be confined, and a
	// composition with a sandbox mode fails closed).
	Confiner bash.Confiner
	// LaunchDir is the process launch directory.
	LaunchDir string
	// Getenv reads the environment that locates the user's files (skills,
	// instructions, the spill root); nil means os.Getenv.
	Getenv func(string) string
	// SpillRoot holds the sessions' spill directories (empty: spill/
	// beside the default sessions root).
	SpillRoot string
	// Programs runs run_code programs and workflow scripts (nil: those
	// tools fail with a clear error).
	Programs *jsworker.Pool
}

// Registry builds a session's tool registry.
func (c Composition) Registry(env capabilities.Env, deps Deps) *capabilities.Registry {
	var tools []capabilities.Tool
	if c.Has(FamilyFS) {
		opts := fs.Options{Confine: !c.Upstream}
		if !c.Upstream && c.Sandbox != "" {
			// File tools obey the session's sandbox mode like bash: writes
			// under read-only and paths outside the root ask first.
			opts.Gate = spillReads{gate: &fs.ModeGate{Mode: c.sessionMode, Approver: deps.Approver, Remember: rememberMode}, dir: deps.spillDir(env)}
			if k := c.contained(deps.getenv()); k != nil {
				opts.Special = k.special // secrets and files that run code later ask, inside a root too
			}
		}
		if c.Undo && env != nil {
			opts.OnChange = func(_ context.Context, ch fs.Change) {
				undo.Record(env.Log(), ch.CallID, ch.Path, ch.Existed, ch.Before, ch.After)
			}
		}
		tools = append(tools, fs.New(opts)...)
	}
	var tasks *bash.Tasks // background tasks: bash's, shared by background subagents
	if c.Has(FamilyBash) {
		bo := c.bashOptions(env, deps)
		tasks = bo.Tasks
		tools = append(tools, bash.New(bo)...)
	}
	if c.Has(FamilyTodo) {
		tools = append(tools, todo.Tool{})
	}
	asker := deps.Asker
	if asker == nil {
		asker = capabilities.HostOf(env).Asker
	}
	if c.Has(FamilyAsk) {
		tools = append(tools, ask.Tool{Asker: asker})
	}
	if c.Has(FamilyPlan) {
		tools = append(tools, plan.Tool{Asker: asker})
	}
	if c.Has(FamilySubagent) {
		if c.Upstream {
			tools = append(tools, subagent.Tool{}, subagent.Tool{Fork: true})
		} else {
			// Editor users see what the children do on the call's card.
			card := &subagent.Card{}
			tools = append(tools, subagent.EditorTool{Tool: subagent.Tool{Progress: card, Tasks: tasks}},
				subagent.EditorTool{Tool: subagent.Tool{Fork: true, Progress: card, Tasks: tasks}})
		}
	}
	if c.Has(FamilyWorkflow) {
		tools = append(tools, workflow.Tool{Progress: !c.Upstream, Programs: deps.Programs, Engine: workflow.Config{StructuredNudges: structuredNudges(c)}})
	}
	tools = append(tools, c.toolbox(env, deps)...)
	tools = c.codeMode(tools, deps.Programs)
	return c.finish(capabilities.NewRegistry(tools...), env, deps)
}

// bashOptions configures the bash family: upstream's timeouts, and a
// confining executor whenever the composition has a sandbox mode.
func (c Composition) bashOptions(env capabilities.Env, deps Deps) bash.Options {
	o := bash.Options{DefaultTimeout: 60000, EnvPass: c.EnvPass, EnvStrip: c.EnvStrip}
	// A finished background task is announced to the model.
	if inj := capabilities.HostOf(env).Injector; inj != nil {
		o.Tasks = bash.NewTasks(func(info bash.TaskInfo) {
			inj.Inject(session.PluginSource("tool-bash"), bash.Notice(info))
		})
	}
	if c.Sandbox == "" {
		return o
	}
	o.DefaultTimeout = 120000
	confiner := deps.Confiner
	if confiner == nil {
		confiner = unconfinable{}
	}
	var contain func(*capabilities.Call) bash.Containment
	if k := c.contained(deps.getenv()); k != nil {
		contain = k.bashContainment
	}
	o.Sandbox = &bash.Sandboxing{
		Contain:         contain,
		RememberNetwork: rememberNetwork,
		Confiner:        confiner,
		Approver:        deps.Approver,
		// Editor users get one /tmp per session on every backend;
		// upstream keeps each backend's own /tmp, as recorded.
		SessionTmp: !c.Upstream,
		Mode:       c.sessionMode,
		Remember:   rememberMode,
		Root: func(call *capabilities.Call) string {
			// Upstream confines to the launch directory; editor users get
			// the project the session was opened on.
			if c.Upstream || call.Session == nil {
				return deps.LaunchDir
			}
			return call.Session.Cwd()
		},
	}
	return o
}

// envPolicy is which of the agent's variables reach the commands the
// composition runs: bash, hooks, ripgrep and stdio MCP servers alike.
func (c Composition) envPolicy() bash.EnvPolicy {
	return bash.EnvPolicy{Pass: c.EnvPass, Strip: c.EnvStrip}
}

// sessionMode is the calling session's sandbox mode: its knob, else the
// composition default.
func (c Composition) sessionMode(call *capabilities.Call) string {
	if k := capabilities.HostOf(call.Session).Knobs; k != nil {
		if v, ok := k.Knob(agent.KnobSandboxMode); ok {
			return v
		}
	}
	return string(c.Sandbox)
}

// rememberMode widens the calling session's sandbox mode after an "always
// allow" answer.
func rememberMode(call *capabilities.Call, mode string) {
	if k := capabilities.HostOf(call.Session).Knobs; k != nil {
		k.SetKnob(agent.KnobSandboxMode, mode)
	}
}

// unconfinable has no sandbox backend: every confined run fails closed.
type unconfinable struct{}

func (unconfinable) Confine(_ context.Context, _ []string, p sandbox.Policy) (sandbox.Confined, error) {
	return sandbox.Confined{}, &sandbox.UnavailableError{Mode: p.Mode}
}

// Commands returns the slash commands the composition mounts.
func (c Composition) Commands() []agent.Command {
	if !c.Undo {
		return nil
	}
	return []agent.Command{{
		Name:        "undo",
		Description: "Revert the file changes of the agent's last turn (files you edited since are left alone)",
		Run: func(ctx context.Context, s *agent.Session, _ string) string {
			files, err := undoFiles(s)
			if err != nil {
				return "Cannot undo: " + err.Error()
			}
			r, ok := undo.RevertFiles(ctx, s.Log(), files)
			if !ok {
				return undo.NothingToUndo
			}
			return undo.Report(r, s.Cwd())
		},
	}}
}

// undoFiles is how /undo reaches the files the agent changed: confined
// beneath the workspace root a path lies in (the cwd or an extra root),
// unconfined for the paths outside the user approved; through the editor
// (its buffers, its review) when it hosts the session's files.
func undoFiles(s *agent.Session) (capabilities.Files, error) {
	host := capabilities.HostOf(s)
	var roots []string
	for _, r := range host.Roots {
		if fi, err := os.Stat(r); err == nil && fi.IsDir() {
			roots = append(roots, r) // a root removed since cannot hold what is undone
		}
	}
	var files capabilities.Files
	routed, err := localfs.NewRouted(s.Cwd(), roots...)
	if err != nil {
		return nil, err
	}
	files = routed
	if host.Files != nil {
		files = capabilities.Through(files, host.Files)
	}
	return files, nil
}

// ModeDefs returns the configured session modes (nil: not composed).
func (c Composition) ModeDefs() []agent.ModeDef {
	if !c.Modes {
		return nil
	}
	return []agent.ModeDef{agent.PlanMode()}
}

// Sections returns the composition's own prompt sections.
func (c Composition) Sections() []agent.Section {
	return []agent.Section{{Name: "deployment:persona", Order: 0, Text: c.Persona}}
}
