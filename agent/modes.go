package agent

import (
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/plan"
	"github.com/dsh-acp/dsh-acp/session"
)

// DefaultMode is the mode without a policy.
const DefaultMode = "default"

// defaultModeName and defaultModeDescription name the default mode for
// editors.
const (
	defaultModeName        = "Default"
	defaultModeDescription = "The agent reads, edits and runs commands within the sandbox."
)

// ModeDef is a configured session mode.
type ModeDef struct {
	// ID names the mode.
	ID string
	// Name and Description present the mode to editors' users.
	Name, Description string
	// Offers reports whether the mode offers and permits a tool, by what
	// the tool says it does. A tool whose traits name a mode of its own
	// (Traits.Mode) is offered in that mode only.
	Offers func(capabilities.Traits) bool
	// Refusal, when set, is the error a refused tool call gets; %q is the
	// tool's name. Else "tool %q is not available in %q mode".
	Refusal string
	// Policy is the mode:policy prompt section text.
	Policy string
}

// PlanMode returns the built-in plan mode: the tools that only read and
// the planning tools (the task list, and exit_plan_mode, whose traits
// keep it to this mode).
func PlanMode() ModeDef {
	return ModeDef{ID: plan.ModeID, Name: "Plan",
		Description: "Read-only: the agent investigates and presents a plan for your approval before changing anything.",
		Offers:      func(t capabilities.Traits) bool { return t.ReadOnly || t.Plans },
		Refusal:     "tool %q is not available in plan mode; continue planning and present your plan with " + plan.ToolName + " when ready",
		Policy: "You are in plan mode. Investigate with the read-only tools you have, work out a concrete plan, and " +
			"present it with " + plan.ToolName + ". Do not try to change files or run commands until the user approves the plan."}
}

// ModeName returns how editors name mode id and describe it (the id
// itself, undescribed, for a mode that is not defined).
func (s *Session) ModeName(id string) (name, description string) {
	if id == DefaultMode {
		return defaultModeName, defaultModeDescription
	}
	if def, ok := s.rt.modeDef(id); ok && def.Name != "" {
		return def.Name, def.Description
	}
	return id, ""
}

// Modes lists a session's modes: default first, then the configured ones.
func (s *Session) Modes() ([]string, bool) {
	if s.rt.cfg.Modes == nil {
		return nil, false
	}
	ids := []string{DefaultMode}
	for _, m := range s.rt.cfg.Modes {
		ids = append(ids, m.ID)
	}
	return ids, true
}

// modeDef returns the configured mode named id.
func (r *Runtime) modeDef(id string) (ModeDef, bool) {
	for _, m := range r.cfg.Modes {
		if m.ID == id {
			return m, true
		}
	}
	return ModeDef{}, false
}

// foldMode returns the last mode/set in events, or "default" (the full
// fold; a session reads loggedMode, which is O(1)).
func foldMode(events []session.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == session.TypeModeSet {
			if m, ok := modeOf(events[i]); ok {
				return m
			}
		}
	}
	return DefaultMode
}

// modeOf decodes the mode of a mode/set event.
func modeOf(e session.Event) (string, bool) {
	var m struct {
		Mode string `json:"mode"`
	}
	if e.Decode(&m) != nil {
		return "", false
	}
	return m.Mode, true
}

// loggedMode is foldMode over the session's log, in O(1).
func (s *Session) loggedMode() string { return lastMode(s.log) }

// lastMode is foldMode(log.Events()) in O(1).
func lastMode(log *session.Log) string {
	e, ok := log.Last(session.TypeModeSet)
	if !ok {
		return DefaultMode
	}
	if m, ok := modeOf(e); ok {
		return m
	}
	return foldMode(log.Events())
}

// LoggedMode is the mode folded from the log; a mode no longer defined
// reads as default.
func (s *Session) LoggedMode() string {
	m := s.loggedMode()
	if _, ok := s.rt.modeDef(m); !ok {
		return DefaultMode
	}
	return m
}

// Mode returns the session's mode as the client sees it: a pending switch,
// else the logged mode.
func (s *Session) Mode() string {
	s.mu.Lock()
	p := s.pendingMode
	s.mu.Unlock()
	if p != "" {
		return p
	}
	return s.LoggedMode()
}

// SetMode records a mode switch, flushed into the log at the next turn
// start or step end (with Config.DurableKnobs it is recorded as
// knob/pending at once, so it survives a crash before that). An unknown id is an error naming the available modes.
func (s *Session) SetMode(id string) error {
	ids, ok := s.Modes()
	if !ok {
		return fmt.Errorf("session modes are not composed")
	}
	known := false
	for _, m := range ids {
		known = known || m == id
	}
	if !known {
		return fmt.Errorf("unknown mode %q — available modes: %s", id, strings.Join(ids, ", "))
	}
	if id == s.Mode() {
		return nil
	}
	s.mu.Lock()
	s.pendingMode = id
	s.mu.Unlock()
	s.recordPending(knobMode, id)
	return nil
}

// allowedIn reports whether mode m permits tool t (nil: no tool of that
// name, which no mode with a policy permits) and, if not, why.
func (r *Runtime) allowedIn(m string, t capabilities.Tool, name string) (bool, string) {
	def, ok := r.modeDef(m)
	if !ok {
		return true, ""
	}
	if t != nil && def.Offers != nil && def.Offers(t.Traits()) {
		return true, ""
	}
	if def.Refusal != "" {
		return false, fmt.Sprintf(def.Refusal, name)
	}
	return false, fmt.Sprintf("tool %q is not available in %q mode", name, m)
}

// offeredIn reports whether tool t is on the wire in mode m: a tool of
// one mode (Traits.Mode, when that mode is composed) only in that mode,
// any other as m allows.
func (r *Runtime) offeredIn(m string, t capabilities.Tool) bool {
	if own := t.Traits().Mode; own != "" {
		if _, ok := r.modeDef(own); ok {
			return own == m
		}
	}
	ok, _ := r.allowedIn(m, t, t.Name())
	return ok
}

// modeSection is the mode:policy prompt section of the logged mode.
func (s *Session) modeSection() (Section, bool) {
	if s.rt.cfg.Modes == nil {
		return Section{}, false
	}
	def, _ := s.rt.modeDef(s.LoggedMode())
	return Section{Name: "mode:policy", Order: 50, Text: def.Policy}, true
}
