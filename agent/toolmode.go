package agent

import (
	"context"
	"fmt"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
)

// offered reports whether the model is offered tool t now: not a tool the
// composition keeps off the wire, and with Config.ToolModeKnob as the
// session's tool mode says — native: every tool but the program tool
// (Traits.Program: run_code); code: the program tool alone (the rest stay
// callable from its programs); both: all.
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
		return t.Traits().Program
	case ToolModeNative:
		return !t.Traits().Program
	}
	return true
}

// toolModeGate refuses the program tool (run_code) while the session's
// tool mode is native:
// the model is not offered it then, and a call that names it anyway (a
// model that remembers it, a hostile prompt) must not reach it either.
type toolModeGate struct{ s *Session }

// Name implements pipeline.Namer.
func (toolModeGate) Name() string { return "tool mode" }

// CheckTool implements pipeline.ToolGate.
func (g toolModeGate) CheckTool(_ context.Context, _ pipeline.Conversation, c pipeline.Call) (pipeline.ToolDecision, error) {
	if t, ok := g.s.tools.Lookup(c.Name); !ok || !t.Traits().Program {
		return pipeline.ToolDecision{}, nil
	}
	if mode, _ := g.s.Knob(KnobToolMode); mode == ToolModeNative {
		return pipeline.ToolDecision{Verdict: pipeline.ToolDeny, Reason: fmt.Sprintf(
			"tool %q is not available: the session's tool mode is native (the Tools option), so call the tools directly", c.Name)}, nil
	}
	return pipeline.ToolDecision{}, nil
}
