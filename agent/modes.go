package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities/plan"
	"github.com/dsh-acp/dsh-acp/session"
)

// DefaultMode is the mode without a policy.
const DefaultMode = "default"

// ModeDef is a configured session mode.
type ModeDef struct {
	// ID names the mode.
	ID string
	// Allow lists the tools the mode offers and permits.
	Allow []string
	// Only lists the tools offered in this mode alone (no other mode,
	// the default included, offers them).
	Only []string
	// Refusal, when set, is the error a refused tool call gets; %q is the
	// tool's name. Else "tool %q is not available in %q mode".
	Refusal string
	// Policy is the mode:policy prompt section text.
	Policy string
}

// PlanMode returns the built-in plan mode: read-only tools and the
// exit_plan_mode review, offered in plan mode only.
func PlanMode() ModeDef {
	return ModeDef{ID: plan.ModeID,
		// web_fetch and web_search are mounted by the default composition
		// (web_search once a provider is configured); a tool the
		// composition does not mount is never offered, listed or not.
		Allow:   []string{"read", "todo_write", "web_search", "web_fetch", plan.ToolName, "glob", "grep", "skill"},
		Only:    []string{plan.ToolName},
		Refusal: "tool %q is not available in plan mode; continue planning and present your plan with " + plan.ToolName + " when ready",
		Policy: "You are in plan mode. Investigate with the read-only tools you have, work out a concrete plan, and " +
			"present it with " + plan.ToolName + ". Do not try to change files or run commands until the user approves the plan."}
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

// allowedIn reports whether mode m permits tool name.
func (r *Runtime) allowedIn(m, name string) (bool, string) {
	def, ok := r.modeDef(m)
	if !ok {
		return true, ""
	}
	for _, a := range def.Allow {
		if a == name {
			return true, ""
		}
	}
	if def.Refusal != "" {
		return false, fmt.Sprintf(def.Refusal, name)
	}
	return false, fmt.Sprintf("tool %q is not available in %q mode", name, m)
}

// offeredIn reports whether tool name is on the wire in mode m: a tool
// some mode offers alone only in that mode, any other as m allows.
func (r *Runtime) offeredIn(m, name string) bool {
	for _, def := range r.cfg.Modes {
		if slices.Contains(def.Only, name) {
			return def.ID == m
		}
	}
	ok, _ := r.allowedIn(m, name)
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
