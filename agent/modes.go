package agent

import (
	"fmt"
	"strings"

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
	// Policy is the mode:policy prompt section text.
	Policy string
}

// PlanMode returns the built-in plan mode: read-only tools and the
// exit_plan_mode review.
func PlanMode() ModeDef {
	return ModeDef{ID: "plan", Allow: []string{"read", "todo_write", "web_search", "web_fetch", "exit_plan_mode"},
		Policy: "You are in plan mode. Investigate with the read-only tools you have, work out a concrete plan, and " +
			"present it with exit_plan_mode. Do not try to change files or run commands until the user approves the plan."}
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

func (s *Session) modeDef(id string) (ModeDef, bool) {
	for _, m := range s.rt.cfg.Modes {
		if m.ID == id {
			return m, true
		}
	}
	return ModeDef{}, false
}

// foldMode returns the last mode/set in events, or "default".
func foldMode(events []session.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == session.TypeModeSet {
			var m struct {
				Mode string `json:"mode"`
			}
			if events[i].Decode(&m) == nil {
				return m.Mode
			}
		}
	}
	return DefaultMode
}

// LoggedMode is the mode folded from the log; a mode no longer defined
// reads as default.
func (s *Session) LoggedMode() string {
	m := foldMode(s.log.Events())
	if _, ok := s.modeDef(m); !ok {
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

// flushMode appends a pending mode switch and, when the model has already
// seen a request in another mode, a notice telling it.
func (s *Session) flushMode() {
	s.mu.Lock()
	p := s.pendingMode
	s.pendingMode = ""
	s.mu.Unlock()
	events := s.log.Events()
	if p == "" || p == foldMode(events) {
		return
	}
	s.log.Append(session.TypeModeSet, struct {
		Mode string `json:"mode"`
	}{p})
	hi := max(lastIndex(events, session.TypeRequestHeader), lastIndex(events, session.TypeRequestHeaderDelta))
	if hi < 0 || foldMode(events[:hi+1]) == p {
		return
	}
	text := "The user switched this session to " + p + " mode."
	if p == DefaultMode {
		text = "The user switched this session back to the default mode."
	}
	s.log.Append(session.TypeContextMessage, session.Message{Content: []session.Block{session.TextBlock(text)},
		Source: session.Source{Kind: "plugin", Plugin: "mode"}})
}

// noticeUndefinedMode tells the model once per session and mode that its
// logged mode no longer exists.
func (s *Session) noticeUndefinedMode() {
	if s.rt.cfg.Modes == nil {
		return // no mode service: modes mean nothing here
	}
	m := foldMode(s.log.Events())
	if m == DefaultMode {
		return
	}
	if _, ok := s.modeDef(m); ok {
		return
	}
	if s.undefinedNoticed == nil {
		s.undefinedNoticed = map[string]bool{}
	}
	if s.undefinedNoticed[m] {
		return
	}
	s.undefinedNoticed[m] = true
	s.log.Append(session.TypeContextMessage, session.Message{Content: []session.Block{session.TextBlock(
		fmt.Sprintf("Mode %q is no longer defined in this deployment's configuration; the session continues in the default mode.", m))},
		Source: session.Source{Kind: "plugin", Plugin: "mode"}})
}

// allowed reports whether the logged mode permits tool name, and the
// denial text when it does not.
func (s *Session) allowed(name string) (bool, string) {
	return s.allowedIn(s.LoggedMode(), name)
}

// allowedIn reports whether mode m permits tool name.
func (s *Session) allowedIn(m, name string) (bool, string) {
	def, ok := s.modeDef(m)
	if !ok {
		return true, ""
	}
	for _, a := range def.Allow {
		if a == name {
			return true, ""
		}
	}
	if m == "plan" {
		return false, fmt.Sprintf("tool %q is not available in plan mode; continue planning and present your plan with exit_plan_mode when ready", name)
	}
	return false, fmt.Sprintf("tool %q is not available in %q mode", name, m)
}

// offeredIn reports whether tool name is on the wire in mode m.
func (s *Session) offeredIn(m, name string) bool {
	if name == "exit_plan_mode" {
		return m == "plan"
	}
	ok, _ := s.allowedIn(m, name)
	return ok
}

// modeSection is the mode:policy prompt section of the logged mode.
func (s *Session) modeSection() (Section, bool) {
	if s.rt.cfg.Modes == nil {
		return Section{}, false
	}
	def, _ := s.modeDef(s.LoggedMode())
	return Section{Name: "mode:policy", Order: 50, Text: def.Policy}, true
}
