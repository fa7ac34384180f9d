package agent

import (
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/session"
)

// Session config knobs (log-folded, per session).
const (
	KnobSandboxMode    = "sandbox-mode"
	KnobApprovalPolicy = "approval-policy"
)

// knobEvent returns the event type and payload of a knob switch.
func knobEvent(id, value string) (string, any) {
	if id == KnobSandboxMode {
		return session.TypeSandboxMode, struct {
			Mode string `json:"mode"`
		}{value}
	}
	return session.TypeApprovalPolicy, struct {
		Policy string `json:"policy"`
	}{value}
}

// foldKnob returns the last logged value of a knob, or "".
func foldKnob(events []session.Event, id string) string {
	typ, _ := knobEvent(id, "")
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == typ {
			var v struct {
				Mode   string `json:"mode"`
				Policy string `json:"policy"`
			}
			if events[i].Decode(&v) == nil {
				return v.Mode + v.Policy
			}
		}
	}
	return ""
}

// knobDefault returns the composition default of a knob and whether the
// knob exists in this composition.
func (s *Session) knobDefault(id string) (string, bool) {
	switch id {
	case KnobSandboxMode:
		return s.rt.cfg.SandboxDefault, s.rt.cfg.SandboxDefault != ""
	case KnobApprovalPolicy:
		if s.rt.cfg.Approval == nil {
			return "", false
		}
		return s.rt.cfg.Approval.DefaultPolicy(), true
	}
	return "", false
}

// folded returns the knob's value from the log, else its default.
func (s *Session) folded(id string) string {
	if v := foldKnob(s.log.Events(), id); v != "" {
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
	if session.TurnOpen(s.log.Events()) {
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
	if s.rt.cfg.Approval.Policy(s.log.Events()) == approval.PolicyNever {
		text = approval.NeverSection
	}
	return Section{Name: "approval:policy", Order: 115, Text: text}, true
}
