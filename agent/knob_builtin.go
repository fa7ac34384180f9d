package agent

import (
	"slices"
	"strings"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
)

// Knob ids (the config option ids on the wire).
const (
	// KnobSandboxMode is what the session's commands and file tools may
	// touch: a sandbox.Mode (with Config.SandboxDefault).
	KnobSandboxMode = "sandbox-mode"
	// KnobApprovalPolicy is whether permission requests reach the user:
	// an approval.Policy (with Config.Approval).
	KnobApprovalPolicy = "approval-policy"
	// KnobModel is the model the session's requests name (with
	// Config.ModelKnobs).
	KnobModel = "model"
	// KnobThinking is the session's thinking switch, ThinkingEnabled or
	// ThinkingDisabled (with Config.ModelKnobs).
	KnobThinking = "thinking"
	// KnobToolMode is how the session's tools reach the model:
	// ToolModeNative, ToolModeCode or ToolModeBoth (with
	// Config.ToolModeKnob).
	KnobToolMode = "tool-mode"
	// KnobNetwork is whether the session's confined commands reach the
	// network: NetworkOff or NetworkOn (with Config.NetworkDefault).
	KnobNetwork = "network"
)

// Network knob values.
const (
	NetworkOff = "off"
	NetworkOn  = "on"
)

// Tool mode knob values.
const (
	ToolModeNative = "native"
	ToolModeCode   = "code"
	ToolModeBoth   = "both"
)

// Thinking knob values.
const (
	ThinkingEnabled  = "enabled"
	ThinkingDisabled = "disabled"
)

// Event types of the knobs besides the sandbox mode and the approval
// policy (session.TypeSandboxMode, session.TypeApprovalPolicy).
const (
	// TypeModelSet switches the session's model: {model}.
	TypeModelSet = "model/set"
	// TypeThinkingSet switches the session's thinking: {thinking}.
	TypeThinkingSet = "model/thinking"
	// TypeToolModeSet switches the session's tool mode: {mode}.
	TypeToolModeSet = "tools/mode"
	// TypeNetworkSet switches the session's Network knob: {network}.
	TypeNetworkSet = "bash/network"
)

// NoSandboxNote ends a confined mode's description on a system without a
// command sandbox (Windows: the contract's win32 chain is empty).
const NoSandboxNote = " This system has no command sandbox, so commands are refused in this mode (file tools still work); choose Full access to run them."

// builtinKnobs are the runtime's knobs in anchoring order (the order held
// switches are logged at a turn's start: sandbox-approval-modes § 7).
// Adding a knob is adding its value here; nothing else reads a knob by
// its id but the code the knob exists for.
var builtinKnobs = [...]Knob{
	{
		ID: KnobSandboxMode, Event: session.TypeSandboxMode, Field: "mode",
		Default: func(c Config) (string, bool) { return string(c.SandboxDefault), c.SandboxDefault != "" },
		Choices: sandboxMenu,
		Option: KnobOption{Name: "Sandbox", Description: "What the agent's commands and file tools may touch without asking you.",
			Category: "_sandbox", Order: 30},
		Upstream: &KnobOption{Name: "Sandbox", Description: "The file sandbox mode bash commands in this session run under.",
			Category: "mode"},
		Durable:   true,
		Narrowest: []string{string(sandbox.ReadOnly), string(sandbox.WorkspaceWrite), string(sandbox.DangerFullAccess)},
	},
	{
		ID: KnobApprovalPolicy, Event: session.TypeApprovalPolicy, Field: "policy",
		Default: func(c Config) (string, bool) {
			if c.Approval == nil {
				return "", false
			}
			return string(c.Approval.DefaultPolicy()), true
		},
		Choices: fixed(
			Choice{string(approval.PolicyAsk), "Ask me", "Permission requests reach you, and you decide each one."},
			Choice{string(approval.PolicyNever), "Never ask", "Permission requests are rejected without asking; the agent works within the sandbox."}),
		Option: KnobOption{Name: "Approvals", Description: "Whether requests to go beyond the sandbox reach you.",
			Category: "_approvals", Order: 50},
		Upstream: &KnobOption{Name: "Approvals",
			Description: "ask: permission prompts reach you; never: they are rejected automatically."},
		Durable:   true,
		Narrowest: []string{string(approval.PolicyNever), string(approval.PolicyAsk)},
		Narration: &KnobNarration{Source: "approval",
			Told: func(h Header) string {
				if strings.Contains(h.System, approval.NeverSection) {
					return string(approval.PolicyNever)
				}
				return string(approval.PolicyAsk)
			},
			Text: func(told, current string, byUser bool) string {
				return approval.Narration(approval.Policy(told), approval.Policy(current), byUser)
			}},
	},
	{
		ID: KnobModel, Event: TypeModelSet, Field: "model",
		Default: func(c Config) (string, bool) { return c.Model, c.ModelKnobs },
		Values:  ValuesModels,
		Option: KnobOption{Name: "Model", Description: "The model this session's requests go to.",
			Category: "model", Order: 10},
		Durable: true,
	},
	{
		ID: KnobThinking, Event: TypeThinkingSet, Field: "thinking",
		Default: func(c Config) (string, bool) { return ThinkingEnabled, c.ModelKnobs },
		Choices: fixed(
			Choice{ThinkingEnabled, "On", "The model reasons before it answers: slower, better at hard problems."},
			Choice{ThinkingDisabled, "Off", "The model answers at once: faster and cheaper."}),
		Values: ValuesThinking,
		Option: KnobOption{Name: "Thinking", Description: "Whether the model reasons before it answers.",
			Category: "thought_level", Order: 20},
		Durable: true,
	},
	{
		ID: KnobToolMode, Event: TypeToolModeSet, Field: "mode",
		Default: func(c Config) (string, bool) { return ToolModeNative, c.ToolModeKnob },
		Choices: fixed(
			Choice{ToolModeNative, "Native", "The model calls each tool directly, one card per call."},
			Choice{ToolModeCode, "Code", "The model writes one TypeScript program (run_code) that calls the tools; fewer round trips."},
			Choice{ToolModeBoth, "Both", "The model may call tools directly or write a program that calls them."}),
		Option: KnobOption{Name: "Tools", Description: "How the agent calls its tools: one by one, or from a program it writes.",
			Category: "_tools", Order: 60},
		Durable: true,
	},
	{
		ID: KnobNetwork, Event: TypeNetworkSet, Field: "network",
		Default: func(c Config) (string, bool) { return c.NetworkDefault, c.NetworkDefault != "" },
		Choices: fixed(
			Choice{NetworkOff, "Off", "Sandboxed commands cannot connect anywhere; a command that needs the network asks first."},
			Choice{NetworkOn, "On", "Sandboxed commands may connect anywhere."}),
		Option: KnobOption{Name: "Network", Description: "Whether the agent's sandboxed commands may reach the network without asking you.",
			Category: "_network", Order: 40},
		Durable:   true,
		Narrowest: []string{NetworkOff, NetworkOn},
	},
}

// BuiltinKnobs returns the runtime's own knobs in anchoring order (what
// Config.Knobs defaults to): a composition that registers a knob of its
// own appends it to these.
func BuiltinKnobs() []Knob { return slices.Clone(builtinKnobs[:]) }

// fixed is a Choices that is the same on every system.
func fixed(cs ...Choice) func(string) []Choice {
	return func(string) []Choice { return slices.Clone(cs) }
}

// sandboxChoices are the sandbox modes as the Sandbox menu names them.
func sandboxChoices() []Choice {
	return []Choice{
		{string(sandbox.ReadOnly), "Read only", "Commands and file tools may read but change nothing on disk; a write asks first."},
		{string(sandbox.WorkspaceWrite), "Workspace", "Commands and file tools may change the project and the session's /tmp; writes elsewhere ask first."},
		{string(sandbox.DangerFullAccess), "Full access", "Commands run unconfined and file tools reach any path, without asking. Use with care."},
	}
}

// sandboxMenu returns the Sandbox menu's choices on the system goos. Where
// the system has no sandbox backend, the confined modes say that commands
// fail closed in them.
func sandboxMenu(goos string) []Choice {
	out := sandboxChoices()
	if len(sandbox.ChainFor(goos, nil, false)) > 0 {
		return out
	}
	for i, c := range out {
		if c.Value != string(sandbox.DangerFullAccess) {
			out[i].Description += NoSandboxNote
		}
	}
	return out
}
