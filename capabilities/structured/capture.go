package structured

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

// ToolName is the capture tool's wire name.
const ToolName = "structured_output"

// Recorded is the capture tool's answer once a value is accepted.
const Recorded = "Structured output recorded."

// Capture is one structured child's capture: the structured_output tool
// offered to that child only, and the pipeline member that ends the run
// once a value is recorded. Safe for concurrent use.
type Capture struct {
	schema *Schema
	nudges int // continuations forced when the child finishes without a capture

	mu    sync.Mutex
	value json.RawMessage
}

// NewCapture returns a capture for schema.
func NewCapture(schema *Schema) *Capture { return &Capture{schema: schema} }

// WithNudges lets a child that finishes without a capture go on up to n
// times, told to call structured_output (upstream: none, the run settles
// as an error at once).
func (c *Capture) WithNudges(n int) *Capture {
	c.nudges = n
	return c
}

// Nudge is the steering text of a forced continuation.
const Nudge = "You finished without calling `structured_output`. Your result is only collected through that tool: " +
	"call it now with the result as its arguments, exactly matching its schema."

// Value returns the captured value, if any.
func (c *Capture) Value() (json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.value, c.value != nil
}

// Tool returns the structured_output tool (its parameters are the schema).
func (c *Capture) Tool() capabilities.Tool { return captureTool{c} }

// Member returns the child's pipeline member: after a capture every
// further tool call is denied and the continuation is forced to stop.
func (c *Capture) Member() any { return captureMember{c} }

type captureTool struct{ c *Capture }

// Name implements capabilities.Tool.
func (captureTool) Name() string { return ToolName }

// Traits implements capabilities.Tool: it records the agent's result and claims nothing more.
func (captureTool) Traits() capabilities.Traits { return capabilities.Traits{} }

// Description implements capabilities.Tool.
func (captureTool) Description() string {
	return "Record the final result of your task as structured data matching the parameters schema. Call it exactly once, " +
		"when the task is done; the run ends once the value is recorded."
}

// Schema implements capabilities.Tool: the output schema verbatim.
func (t captureTool) Schema() *capabilities.Schema {
	return &capabilities.Schema{Type: "object", Raw: t.c.schema.Raw()}
}

// PromptSection implements capabilities.Sectioner (tool:structured_output,
// order 190).
func (captureTool) PromptSection() capabilities.Section {
	return capabilities.Section{Name: "tool:structured_output", Order: 190, Text: "Your result is collected as structured data. " +
		"When the task is done, call the `structured_output` tool once with the result as its arguments, exactly matching its " +
		"schema. Do not answer in prose instead: a run that ends without calling it has failed."}
}

// Run implements capabilities.Tool: validate and record.
func (t captureTool) Run(_ context.Context, call *capabilities.Call) (capabilities.Result, error) {
	if v := t.c.schema.Validate(call.Args); len(v) > 0 {
		return capabilities.Result{}, &capabilities.CodedError{Name: "ToolArgsError", Code: "INVALID_ARGS",
			Message: "invalid arguments: " + capabilities.Violations(v)}
	}
	t.c.mu.Lock()
	t.c.value = append(json.RawMessage(nil), call.Args...)
	t.c.mu.Unlock()
	return capabilities.TextResult(Recorded), nil
}

type captureMember struct{ c *Capture }

// Name implements pipeline.Namer.
func (captureMember) Name() string { return "structured-output" }

// CheckTool implements pipeline.ToolGate: nothing runs after a capture.
func (m captureMember) CheckTool(_ context.Context, _ pipeline.Conversation, call pipeline.Call) (pipeline.ToolDecision, error) {
	if _, ok := m.c.Value(); ok {
		return pipeline.ToolDecision{Verdict: pipeline.ToolDeny,
			Reason: fmt.Sprintf("structured output already recorded: the run is complete, so `%s` is not executed", call.Name)}, nil
	}
	return pipeline.ToolDecision{}, nil
}

// DecideContinuation implements pipeline.Continuer: the veto — a captured
// run stops after this step.
func (m captureMember) DecideContinuation(_ context.Context, _ pipeline.Conversation, st pipeline.StepEnd) (pipeline.ContinueDecision, error) {
	if _, ok := m.c.Value(); ok {
		return pipeline.ContinueDecision{Verdict: pipeline.ContinueStop}, nil
	}
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	if !st.Final && !st.Continue && m.c.nudges > 0 {
		// The child would finish without a result: tell it once more.
		m.c.nudges--
		return pipeline.ContinueDecision{Verdict: pipeline.ContinueForce, Steering: &pipeline.Context{
			Source:  session.PluginSource("structured-output"),
			Content: []session.Block{session.TextBlock(Nudge)},
		}}, nil
	}
	return pipeline.ContinueDecision{}, nil
}
