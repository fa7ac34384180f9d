package acp

import (
	"encoding/json"
	"slices"

	"github.com/dsh-acp/dsh-acp/agent"
)

// Config option ids.
const (
	optionSandbox  = agent.KnobSandboxMode
	optionApproval = agent.KnobApprovalPolicy
)

var (
	sandboxModes     = []string{"read-only", "workspace-write", "danger-full-access"}
	approvalPolicies = []string{"ask", "never"}
)

// configOptions lists a session's options with their current values (a
// held switch shows already), in upstream's order; nil when none is
// composed.
func configOptions(s Session) []ConfigOption {
	var out []ConfigOption
	if v, ok := s.Knob(optionSandbox); ok {
		out = append(out, ConfigOption{ID: optionSandbox, Name: "Sandbox",
			Description: "The file sandbox mode bash commands in this session run under.",
			Category:    "mode", Type: "select", CurrentValue: v, Options: selectOptions(sandboxModes)})
	}
	if v, ok := s.Knob(optionApproval); ok {
		out = append(out, ConfigOption{ID: optionApproval, Name: "Approvals",
			Description: "ask: permission prompts reach you; never: they are rejected automatically.",
			Type:        "select", CurrentValue: v, Options: selectOptions(approvalPolicies)})
	}
	return out
}

func selectOptions(values []string) []SelectOption {
	out := make([]SelectOption, len(values))
	for i, v := range values {
		out[i] = SelectOption{Value: v, Name: v}
	}
	return out
}

// setConfigOption handles session/set_config_option (acp-bridge § 7).
func (s *Server) setConfigOption(params json.RawMessage) (any, error) {
	var req SetConfigOptionRequest
	if err := decode(params, &req); err != nil {
		return nil, err
	}
	ls, err := s.lookup(req.SessionID)
	if err != nil {
		return nil, err
	}
	var value string
	if json.Unmarshal(req.Value, &value) != nil || len(req.Value) == 0 || req.Value[0] != '"' {
		if kind := jsonKind(req.Value); kind != "a boolean" {
			return nil, invalidParams("config option %s is a select; its value must be a string, got %s", req.ConfigID, kind)
		}
		return nil, invalidParams("config option %s is a select; boolean values are not accepted", req.ConfigID)
	}
	quoted, _ := marshal(value)
	switch req.ConfigID {
	case optionSandbox:
		if _, ok := ls.s.Knob(optionSandbox); !ok || !slices.Contains(sandboxModes, value) {
			return nil, invalidParams("unknown sandbox-mode value %s", quoted)
		}
	case optionApproval:
		if _, ok := ls.s.Knob(optionApproval); !ok || !slices.Contains(approvalPolicies, value) {
			return nil, invalidParams("unknown approval-policy value %s", quoted)
		}
	default:
		id, _ := marshal(req.ConfigID)
		return nil, invalidParams("unknown config option %s", id)
	}
	ls.s.SetKnob(req.ConfigID, value)
	return SetConfigOptionResponse{ConfigOptions: configOptions(ls.s)}, nil
}

// jsonKind names the kind of a JSON value for messages ("an object").
func jsonKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "no value"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
