package agent

import (
	"slices"

	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
)

// Inheritable is a composition member (Config.Members) that a child agent
// takes over from its parent instead of getting a fresh one: the hook
// bridges, whose hook set and whose project consent are the parent's at
// the moment the child is spawned. Inherit returns the member the child
// gets in its place (the member itself, or one sharing its state).
type Inheritable interface {
	Inherit(child pipeline.Conversation) any
}

// narrower returns the narrower of two values of a knob whose values
// order lists from the narrowest; a value it does not list is the widest.
func narrower(order []string, a, b string) string {
	rank := func(v string) int {
		if i := slices.Index(order, v); i >= 0 {
			return i
		}
		return len(order)
	}
	if rank(b) < rank(a) {
		return b
	}
	return a
}

// effective is the value of knob id that binds s now: the narrower of a
// switch the user made (held for the next turn, which s's tools already
// read) and what s's log says (what its approval service folds).
func (s *Session) effective(k Knob) string {
	cur, _ := s.Knob(k.ID)
	return narrower(k.Narrowest, cur, s.folded(k.ID))
}

// effectiveMode is s's session mode for a child: a mode with a policy
// (plan) binds when the log is in it or a switch to it is held.
func (s *Session) effectiveMode() string {
	if m := s.LoggedMode(); m != DefaultMode {
		return m
	}
	if m := s.Mode(); m != DefaultMode {
		if _, ok := s.rt.modeDef(m); ok {
			return m
		}
	}
	return DefaultMode
}

// inherit gives child s's effective boundaries at the moment it is
// spawned: its sandbox mode, its approval policy, its network switch and
// its session mode, whatever the child's own log (a fork's seed ends at the parent's last
// completed turn) says. They are held switches of the child, anchored at
// its first turn like a user's switch; they bind its tools at once. The
// child can narrow them further; a widening goes through an approval
// (bash escalation, a write under read-only), which reaches the user of
// the root session.
func (s *Session) inherit(child *Session) {
	for _, k := range s.rt.knobs() {
		id := k.ID
		if _, ok := s.knobDefault(id); !ok || k.Narrowest == nil {
			continue
		}
		v := s.effective(k)
		if cur, _ := child.Knob(id); cur == v && child.folded(id) == v {
			continue
		}
		child.mu.Lock()
		if child.pending == nil {
			child.pending = map[string]string{}
		}
		child.pending[id] = v
		child.mu.Unlock()
		child.notePending(id, v)
	}
	if s.rt.cfg.Modes == nil {
		return
	}
	if m := s.effectiveMode(); m != child.Mode() || m != child.LoggedMode() {
		child.mu.Lock()
		child.pendingMode = m
		child.mu.Unlock()
		child.notePending(knobMode, m)
	}
}

// notePending records an inherited switch (Config.DurableKnobs) without
// the flush a user's switch gets: the child's log is written with its
// first turn, and a child is never resumed on its own.
func (s *Session) notePending(knob, value string) {
	if s.rt.cfg.DurableKnobs {
		s.log.Append(TypeKnobPending, knobPending{Knob: knob, Value: value})
	}
}

// inheritMembers returns the composed members of a child of parent: its
// fresh ones (fresh, built by Config.Members for the child), with every
// Inheritable one replaced by what the parent's Inheritable members hand
// down, in the parent's order, where the first fresh one stood.
func inheritMembers(parent *Session, child pipeline.Conversation, fresh []any) []any {
	var handed []any
	for _, m := range parent.composed {
		if in, ok := m.(Inheritable); ok {
			handed = append(handed, in.Inherit(child))
		}
	}
	out := make([]any, 0, len(fresh)+len(handed))
	placed := false
	for _, m := range fresh {
		if _, ok := m.(Inheritable); ok {
			if !placed {
				out, placed = append(out, handed...), true
			}
			continue
		}
		out = append(out, m)
	}
	if !placed {
		out = append(out, handed...)
	}
	return out
}
