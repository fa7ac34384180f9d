package composition

import (
	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/code"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
)

// codeMode adds run_code over the session's other tools (the run_code
// family). In tool mode "code" the other tools stay registered — run_code
// programs call them as tools.<name> — but only run_code is offered to the
// model; in "both" every tool is.
func (c Composition) codeMode(tools []capabilities.Tool, programs *jsworker.Pool) []capabilities.Tool {
	if !c.Has(FamilyRunCode) {
		return tools
	}
	rc := code.Tool{Tools: append([]capabilities.Tool(nil), tools...), Progress: !c.Upstream, Programs: programs}
	if c.ToolMode == agent.ToolModeCode {
		hidden := make([]capabilities.Tool, 0, len(tools)+1)
		for _, t := range tools {
			hidden = append(hidden, code.Hidden{Tool: t})
		}
		tools = hidden
	}
	return append(tools, rc)
}

// maxChildDepth is how deep children nest: unlimited upstream (as
// recorded), three levels for editor users.
func maxChildDepth(c Composition) int {
	if c.Upstream {
		return 0
	}
	return 3
}

// structuredNudges is how many times a structured workflow child that
// finishes without calling structured_output is told to: never upstream
// (it settles as an error), once for editor users.
func structuredNudges(c Composition) int {
	if c.Upstream {
		return 0
	}
	return 1
}
