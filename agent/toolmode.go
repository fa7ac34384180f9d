package agent

import "github.com/dsh-acp/dsh-acp/capabilities"

// codeTool is the name of the code-mode tool the tool-mode knob switches.
const codeTool = "run_code"

// offered reports whether the model is offered tool t now: not a tool the
// composition keeps off the wire, and with Config.ToolModeKnob as the
// session's tool mode says — native: every tool but run_code; code:
// run_code alone (the rest stay callable from its programs); both: all.
func (s *Session) offered(t capabilities.Tool) bool {
	if capabilities.OffWire(t) {
		return false
	}
	if !s.rt.cfg.ToolModeKnob {
		return true
	}
	mode, _ := s.Knob(KnobToolMode)
	switch mode {
	case ToolModeCode:
		return t.Name() == codeTool
	case ToolModeNative:
		return t.Name() != codeTool
	}
	return true
}
