package agent

import (
	"context"

	"github.com/dsh-acp/dsh-acp/session"
)

// TypeKnobPending is the durable record of a switch held for the next
// turn (Config.DurableKnobs): {knob, value}, where knob is a knob id or
// knobMode. It is log-only: the model and the editor never see it; the
// real knob event is still anchored at the next turn as the contract
// says, and a session loaded before that turn restores the switch as
// pending.
const TypeKnobPending = "knob/pending"

// knobMode names the session mode in a knob/pending record.
const knobMode = "mode"

// knobPending is the data of knob/pending.
type knobPending struct {
	Knob  string `json:"knob"`
	Value string `json:"value"`
}

// recordPending logs a held switch durably before the switch is
// acknowledged, in compositions that ask for it.
func (s *Session) recordPending(knob, value string) {
	if !s.rt.cfg.DurableKnobs {
		return
	}
	s.log.Append(TypeKnobPending, knobPending{Knob: knob, Value: value})
	s.durable()
}

// durable makes everything logged so far survive a crash before the
// caller acknowledges a change.
func (s *Session) durable() {
	if err := s.log.Flush(context.Background()); err != nil {
		s.rt.cfg.Log.Error().Err(err).Str("session", s.ID()).Msg("persist a knob switch")
	}
}

// restorePending rebuilds the held switches of a loaded session from its
// knob/pending records: a record still counts when no flush point consumed
// it since (a prompt's turn/start for knobs; any turn/start or step/end for
// the mode).
func (s *Session) restorePending(events []session.Event) {
	if !s.rt.cfg.DurableKnobs {
		return
	}
	lastPrompt, lastModeFlush := -1, -1
	for i, e := range events {
		switch e.Type {
		case session.TypeTurnStart:
			lastModeFlush = i
			var ts session.TurnStart
			if e.Decode(&ts) == nil && ts.Trigger.Kind == session.TriggerMessage {
				lastPrompt = i
			}
		case session.TypeStepEnd:
			lastModeFlush = i
		}
	}
	for i, e := range events {
		if e.Type != TypeKnobPending {
			continue
		}
		var p knobPending
		if e.Decode(&p) != nil {
			continue
		}
		switch {
		case p.Knob == knobMode && i > lastModeFlush:
			s.pendingMode = p.Value
		case p.Knob != knobMode && i > lastPrompt:
			if _, ok := s.knobDefault(p.Knob); ok {
				if s.pending == nil {
					s.pending = map[string]string{}
				}
				s.pending[p.Knob] = p.Value
			}
		}
	}
	if s.pendingMode != "" && s.pendingMode == foldMode(events) {
		s.pendingMode = ""
	}
}
