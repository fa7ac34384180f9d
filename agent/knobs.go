package agent

import (
	"runtime"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/session"
)

// foldKnob returns the last logged value of knob k, or "" (the full
// fold; a session reads Session.loggedKnob, which is O(1)).
func foldKnob(events []session.Event, k Knob) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == k.Event {
			if v, ok := k.Decode(events[i]); ok {
				return v
			}
		}
	}
	return ""
}

// knobSeen is a knob's value as decoded from its latest event, seq.
type knobSeen struct {
	seq   int
	value string
}

// loggedKnob is foldKnob over the session's log, in O(1): the log keeps
// the latest event of every type at hand, and the session the value it
// decoded from it (the log keeps events encoded, so a read would
// otherwise decode the same event at every step).
func (s *Session) loggedKnob(id string) string {
	k, ok := s.rt.knob(id)
	if !ok {
		return ""
	}
	e, ok := s.log.Last(k.Event)
	if !ok {
		return ""
	}
	s.knobMu.Lock()
	seen, hit := s.knobSeen[id]
	s.knobMu.Unlock()
	if hit && seen.seq == e.Seq {
		return seen.value
	}
	v := decodeKnob(s.log, k, e)
	s.knobMu.Lock()
	if s.knobSeen == nil {
		s.knobSeen = map[string]knobSeen{}
	}
	s.knobSeen[id] = knobSeen{e.Seq, v}
	s.knobMu.Unlock()
	return v
}

// lastKnob is foldKnob(log.Events(), k) in O(1).
func lastKnob(log *session.Log, k Knob) string {
	e, ok := log.Last(k.Event)
	if !ok {
		return ""
	}
	return decodeKnob(log, k, e)
}

// decodeKnob is k's value from e, its latest event in log; an event that does
// not decode falls back to the full fold.
func decodeKnob(log *session.Log, k Knob, e session.Event) string {
	if v, ok := k.Decode(e); ok {
		return v
	}
	return foldKnob(log.Events(), k)
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
	k, ok := s.rt.knob(id)
	if !ok || k.Default == nil {
		return "", false
	}
	return k.Default(s.rt.cfg)
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
// anchored at the start of the next turn (and, with Config.DurableKnobs
// and a Durable knob, recorded as knob/pending). Either way the switch is
// on disk when SetKnob returns, so an acknowledged change survives a
// crash. A knob the session does not have is an *UnknownKnobError, a
// value outside the knob's choices a *KnobValueError.
func (s *Session) SetKnob(id, value string) error {
	k, ok := s.rt.knob(id)
	cur, has := s.Knob(id)
	switch {
	case !ok || !has:
		return &UnknownKnobError{ID: id}
	case !k.Allows(runtime.GOOS, value):
		return &KnobValueError{ID: id, Value: value}
	case cur == value:
		return nil
	}
	s.mu.Lock()
	if s.log.TurnOpen() {
		delete(s.pending, id)
		s.log.Append(k.Event, k.Payload(value))
		s.mu.Unlock()
		s.durable()
		return nil
	}
	if s.pending == nil {
		s.pending = map[string]string{}
	}
	s.pending[id] = value
	s.mu.Unlock()
	if k.Durable {
		s.recordPending(id, value)
	}
	return nil
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
