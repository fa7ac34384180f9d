package agent

import (
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/session"
)

// Session config knobs (log-folded, per session).
const (
	KnobSandboxMode    = "sandbox-mode"
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

// TypeNetworkSet switches the session's Network knob: {network}.
const TypeNetworkSet = "bash/network"

// Tool mode knob values.
const (
	ToolModeNative = "native"
	ToolModeCode   = "code"
	ToolModeBoth   = "both"
)

// TypeToolModeSet switches the session's tool mode: {mode}.
const TypeToolModeSet = "tools/mode"

// Thinking knob values.
const (
	ThinkingEnabled  = "enabled"
	ThinkingDisabled = "disabled"
)

// Event types of the model knobs.
const (
	// TypeModelSet switches the session's model: {model}.
	TypeModelSet = "model/set"
	// TypeThinkingSet switches the session's thinking: {thinking}.
	TypeThinkingSet = "model/thinking"
)

// knobIDs lists every knob, in anchoring order.
var knobIDs = [...]string{KnobSandboxMode, KnobApprovalPolicy, KnobModel, KnobThinking, KnobToolMode, KnobNetwork}

// knobValue is the payload of every knob event (each type fills one field).
type knobValue struct {
	Mode     string `json:"mode,omitempty"`
	Policy   string `json:"policy,omitempty"`
	Model    string `json:"model,omitempty"`
	Thinking string `json:"thinking,omitempty"`
	Network  string `json:"network,omitempty"`
}

// knobEvent returns the event type and payload of a knob switch.
func knobEvent(id, value string) (string, any) {
	switch id {
	case KnobSandboxMode:
		return session.TypeSandboxMode, struct {
			Mode string `json:"mode"`
		}{value}
	case KnobModel:
		return TypeModelSet, struct {
			Model string `json:"model"`
		}{value}
	case KnobThinking:
		return TypeThinkingSet, struct {
			Thinking string `json:"thinking"`
		}{value}
	case KnobToolMode:
		return TypeToolModeSet, struct {
			Mode string `json:"mode"`
		}{value}
	case KnobNetwork:
		return TypeNetworkSet, struct {
			Network string `json:"network"`
		}{value}
	}
	return session.TypeApprovalPolicy, struct {
		Policy string `json:"policy"`
	}{value}
}

// foldKnob returns the last logged value of a knob, or "" (the full
// fold; a session reads Session.loggedKnob, which is O(1)).
func foldKnob(events []session.Event, id string) string {
	typ, _ := knobEvent(id, "")
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == typ {
			if v, ok := knobOf(events[i]); ok {
				return v
			}
		}
	}
	return ""
}

// knobOf decodes the value of a knob event.
func knobOf(e session.Event) (string, bool) {
	var v knobValue
	if e.Decode(&v) != nil {
		return "", false
	}
	return v.Mode + v.Policy + v.Model + v.Thinking + v.Network, true
}

// loggedKnob is foldKnob over the session's log, in O(1): the log keeps
// the latest event of every type at hand.
func (s *Session) loggedKnob(id string) string { return lastKnob(s.log, id) }

// lastKnob is foldKnob(log.Events(), id) in O(1).
func lastKnob(log *session.Log, id string) string {
	typ, _ := knobEvent(id, "")
	e, ok := log.Last(typ)
	if !ok {
		return ""
	}
	if v, ok := knobOf(e); ok {
		return v
	}
	return foldKnob(log.Events(), id)
}

// requestConfig is the configuration of the session's next request: its
// model, and the thinking switch once the user chose one (until then the
// provider's default applies and nothing is sent).
func (s *Session) requestConfig() llm.Config {
	c := llm.Config{Model: s.modelID()}
	if s.rt.cfg.ModelKnobs {
		c.Thinking = s.loggedKnob(KnobThinking)
	}
	return c
}

// knobModel is the model the session's log names (Config.ModelKnobs),
// else the runtime's.
func (s *Session) knobModel() string {
	if s.rt.cfg.ModelKnobs {
		if m := s.loggedKnob(KnobModel); m != "" {
			return m
		}
	}
	return s.rt.cfg.Model
}

// knobDefault returns the composition default of a knob and whether the
// knob exists in this composition.
func (s *Session) knobDefault(id string) (string, bool) {
	switch id {
	case KnobSandboxMode:
		return string(s.rt.cfg.SandboxDefault), s.rt.cfg.SandboxDefault != ""
	case KnobApprovalPolicy:
		if s.rt.cfg.Approval == nil {
			return "", false
		}
		return string(s.rt.cfg.Approval.DefaultPolicy()), true
	case KnobModel:
		return s.rt.cfg.Model, s.rt.cfg.ModelKnobs
	case KnobThinking:
		return ThinkingEnabled, s.rt.cfg.ModelKnobs
	case KnobToolMode:
		return ToolModeNative, s.rt.cfg.ToolModeKnob
	case KnobNetwork:
		return s.rt.cfg.NetworkDefault, s.rt.cfg.NetworkDefault != ""
	}
	return "", false
}

// folded returns the knob's value from the log, else its default.
func (s *Session) folded(id string) string {
	if v := s.loggedKnob(id); v != "" {
		return v
	}
	def, _ := s.knobDefault(id)
	return def
}

// Knob returns the current value of a knob (pending switch ?? log ??
// default) and whether the composition has it.
func (s *Session) Knob(id string) (string, bool) {
	if _, ok := s.knobDefault(id); !ok {
		return "", false
	}
	s.mu.Lock()
	p, pending := s.pending[id]
	s.mu.Unlock()
	if pending {
		return p, true
	}
	return s.folded(id), true
}

// SetKnob switches a knob. Equal to the current value: nothing. During a
// turn the event is appended at once; while idle the switch is held and
// anchored at the start of the next turn (and, with Config.DurableKnobs,
// recorded as knob/pending). Either way the switch is on disk when
// SetKnob returns, so an acknowledged change survives a crash.
func (s *Session) SetKnob(id, value string) {
	if cur, ok := s.Knob(id); !ok || cur == value {
		return
	}
	s.mu.Lock()
	if s.log.TurnOpen() {
		delete(s.pending, id)
		typ, data := knobEvent(id, value)
		s.log.Append(typ, data)
		s.mu.Unlock()
		s.durable()
		return
	}
	if s.pending == nil {
		s.pending = map[string]string{}
	}
	s.pending[id] = value
	s.mu.Unlock()
	s.recordPending(id, value)
}

func lastIndex(events []session.Event, typ string) int {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == typ {
			return i
		}
	}
	return -1
}

// approvalSection is the approval:policy prompt section (empty unless the
// policy is never).
func (s *Session) approvalSection() (Section, bool) {
	if s.rt.cfg.Approval == nil {
		return Section{}, false
	}
	text := ""
	if s.rt.cfg.Approval.PolicyOf(s.log) == approval.PolicyNever {
		text = approval.NeverSection
	}
	return Section{Name: "approval:policy", Order: 115, Text: text}, true
}
