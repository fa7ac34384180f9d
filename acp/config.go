package acp

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// Config option ids.
const (
	optionSandbox  = agent.KnobSandboxMode
	optionApproval = agent.KnobApprovalPolicy
	// optionMode is the session mode as a config option (with
	// Options.EditorConfig).
	optionMode = "mode"
	// optionModel and optionThinking are the model knobs (with
	// Options.Models).
	optionModel    = agent.KnobModel
	optionThinking = agent.KnobThinking
	// optionTools is how the session's tools reach the model: native
	// calls, a run_code program, or both (with Options.EditorConfig).
	optionTools = agent.KnobToolMode
	// optionNetwork is whether confined commands reach the network (with
	// Options.EditorConfig), in the Sandbox area.
	optionNetwork = agent.KnobNetwork
)

// choice is one value of an option as the editor's user sees it.
type choice struct{ value, name, description string }

var (
	sandboxChoices = []choice{
		{string(sandbox.ReadOnly), "Read only", "Commands and file tools may read but change nothing on disk; a write asks first."},
		{string(sandbox.WorkspaceWrite), "Workspace", "Commands and file tools may change the project and the session's /tmp; writes elsewhere ask first."},
		{string(sandbox.DangerFullAccess), "Full access", "Commands run unconfined and file tools reach any path, without asking. Use with care."},
	}
	networkChoices = []choice{
		{agent.NetworkOff, "Off", "Sandboxed commands cannot connect anywhere; a command that needs the network asks first."},
		{agent.NetworkOn, "On", "Sandboxed commands may connect anywhere."},
	}
	approvalChoices = []choice{
		{string(approval.PolicyAsk), "Ask me", "Permission requests reach you, and you decide each one."},
		{string(approval.PolicyNever), "Never ask", "Permission requests are rejected without asking; the agent works within the sandbox."},
	}
	thinkingChoices = []choice{
		{agent.ThinkingEnabled, "On", "The model reasons before it answers: slower, better at hard problems."},
		{agent.ThinkingDisabled, "Off", "The model answers at once: faster and cheaper."},
	}
	toolModeChoices = []choice{
		{agent.ToolModeNative, "Native", "The model calls each tool directly, one card per call."},
		{agent.ToolModeCode, "Code", "The model writes one TypeScript program (run_code) that calls the tools; fewer round trips."},
		{agent.ToolModeBoth, "Both", "The model may call tools directly or write a program that calls them."},
	}
)

// optionValues reports a session's option values: the knobs, and the mode
// under "mode" (false: not composed).
type optionValues func(id string) (string, bool)

// settings is what the config options read of a session: its knobs and
// its mode.
type settings interface {
	Knobs
	ModeSwitcher
}

// sessionValues reads the option values from a live session.
func sessionValues(s settings) optionValues {
	return func(id string) (string, bool) {
		if id == optionMode {
			if _, ok := s.Modes(); !ok {
				return "", false
			}
			return s.Mode(), true
		}
		return s.Knob(id)
	}
}

// models returns the offered models, current among them (waiting at most
// until ctx ends for a list still being fetched).
func (s *Server) models(ctx context.Context, current string) []ModelChoice {
	var ms []ModelChoice
	if s.opts.Models != nil {
		ms = s.opts.Models(ctx)
	}
	if !slices.ContainsFunc(ms, func(m ModelChoice) bool { return m.ID == current }) {
		ms = append([]ModelChoice{{ID: current, Thinking: true}}, ms...)
	}
	return ms
}

// modelName makes a model id readable: "deepseek-v4-flash" reads
// "DeepSeek V4 Flash".
func modelName(id string) string {
	words := strings.FieldsFunc(id, func(r rune) bool { return r == '-' || r == '_' })
	for i, w := range words {
		switch {
		case strings.EqualFold(w, "deepseek"):
			words[i] = "DeepSeek"
		case w != "":
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	if len(words) == 0 {
		return id
	}
	return strings.Join(words, " ")
}

// modelOptions are the Model option and, when the current model takes it,
// the Thinking option.
func (s *Server) modelOptions(ctx context.Context, values optionValues) []ConfigOption {
	model, ok := values(optionModel)
	if !ok || s.opts.Models == nil {
		return nil
	}
	ms := s.models(ctx, model)
	cs := make([]choice, len(ms))
	thinks := false
	for i, m := range ms {
		cs[i] = choice{m.ID, m.Name, m.Description}
		if cs[i].name == "" {
			cs[i].name = modelName(m.ID)
		}
		if cs[i].description == "" {
			cs[i].description = "Requests name " + m.ID + "."
		}
		thinks = thinks || (m.ID == model && m.Thinking)
	}
	out := []ConfigOption{{ID: optionModel, Name: "Model",
		Description: "The model this session's requests go to.",
		Category:    "model", Type: "select", CurrentValue: model, Options: namedOptions(cs)}}
	if v, ok := values(optionThinking); ok && thinks {
		out = append(out, ConfigOption{ID: optionThinking, Name: "Thinking",
			Description: "Whether the model reasons before it answers.",
			Category:    "thought_level", Type: "select", CurrentValue: v, Options: namedOptions(thinkingChoices)})
	}
	return out
}

// optionsFrom builds the option list from values; with EditorConfig the
// mode leads, and every option and value has a human name and a
// description.
func (s *Server) optionsFrom(sess ModeSwitcher, values optionValues) []ConfigOption {
	return s.optionsWith(context.Background(), sess, values)
}

// optionsWith is optionsFrom waiting at most until ctx ends for the model
// list.
func (s *Server) optionsWith(ctx context.Context, sess ModeSwitcher, values optionValues) []ConfigOption {
	if !s.opts.EditorConfig {
		return upstreamOptions(values)
	}
	var out []ConfigOption
	if v, ok := values(optionMode); ok {
		ids, _ := sess.Modes()
		cs := make([]choice, len(ids))
		for i, id := range ids {
			cs[i] = modeChoice(sess, id)
		}
		out = append(out, ConfigOption{ID: optionMode, Name: "Mode",
			Description: "How much the agent may do on its own in this session.",
			Category:    "mode", Type: "select", CurrentValue: v, Options: namedOptions(cs)})
	}
	out = append(out, s.modelOptions(ctx, values)...)
	if v, ok := values(optionSandbox); ok {
		out = append(out, ConfigOption{ID: optionSandbox, Name: "Sandbox",
			Description: "What the agent's commands and file tools may touch without asking you.",
			Category:    "_sandbox", Type: "select", CurrentValue: v, Options: namedOptions(sandboxMenu(runtime.GOOS))})
	}
	if v, ok := values(optionNetwork); ok {
		out = append(out, ConfigOption{ID: optionNetwork, Name: "Network",
			Description: "Whether the agent's sandboxed commands may reach the network without asking you.",
			Category:    "_network", Type: "select", CurrentValue: v, Options: namedOptions(networkChoices)})
	}
	if v, ok := values(optionApproval); ok {
		out = append(out, ConfigOption{ID: optionApproval, Name: "Approvals",
			Description: "Whether requests to go beyond the sandbox reach you.",
			Category:    "_approvals", Type: "select", CurrentValue: v, Options: namedOptions(approvalChoices)})
	}
	if v, ok := values(optionTools); ok {
		out = append(out, ConfigOption{ID: optionTools, Name: "Tools",
			Description: "How the agent calls its tools: one by one, or from a program it writes.",
			Category:    "_tools", Type: "select", CurrentValue: v, Options: namedOptions(toolModeChoices)})
	}
	return out
}

// upstreamOptions is upstream's option list (acp-bridge § 9).
func upstreamOptions(values optionValues) []ConfigOption {
	var out []ConfigOption
	if v, ok := values(optionSandbox); ok {
		out = append(out, ConfigOption{ID: optionSandbox, Name: "Sandbox",
			Description: "The file sandbox mode bash commands in this session run under.",
			Category:    "mode", Type: "select", CurrentValue: v, Options: selectOptions(sandbox.Modes())})
	}
	if v, ok := values(optionApproval); ok {
		out = append(out, ConfigOption{ID: optionApproval, Name: "Approvals",
			Description: "ask: permission prompts reach you; never: they are rejected automatically.",
			Type:        "select", CurrentValue: v, Options: selectOptions(approval.Policies())})
	}
	return out
}

func selectOptions[V ~string](values []V) []SelectOption {
	out := make([]SelectOption, len(values))
	for i, v := range values {
		out[i] = SelectOption{Value: string(v), Name: string(v)}
	}
	return out
}

func namedOptions(cs []choice) []SelectOption {
	out := make([]SelectOption, len(cs))
	for i, c := range cs {
		out[i] = SelectOption{Value: c.value, Name: c.name, Description: c.description}
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
		if _, ok := ls.s.Knob(optionSandbox); !ok || !sandbox.Mode(value).Valid() {
			return nil, invalidParams("unknown sandbox-mode value %s", quoted)
		}
	case optionApproval:
		if _, ok := ls.s.Knob(optionApproval); !ok || !approval.Policy(value).Valid() {
			return nil, invalidParams("unknown approval-policy value %s", quoted)
		}
	case optionModel, optionThinking:
		if err := s.checkModelValue(ls, req.ConfigID, value, quoted); err != nil {
			return nil, err
		}
	case optionTools:
		if _, ok := ls.s.Knob(optionTools); !ok || !s.opts.EditorConfig {
			id, _ := marshal(req.ConfigID)
			return nil, invalidParams("unknown config option %s", id)
		}
		if !slices.ContainsFunc(toolModeChoices, func(c choice) bool { return c.value == value }) {
			return nil, invalidParams("unknown tool-mode value %s", quoted)
		}
	case optionNetwork:
		if _, ok := ls.s.Knob(optionNetwork); !ok || !s.opts.EditorConfig {
			id, _ := marshal(req.ConfigID)
			return nil, invalidParams("unknown config option %s", id)
		}
		if !slices.ContainsFunc(networkChoices, func(c choice) bool { return c.value == value }) {
			return nil, invalidParams("unknown network value %s", quoted)
		}
	case optionMode:
		if !s.opts.EditorConfig {
			id, _ := marshal(req.ConfigID)
			return nil, invalidParams("unknown config option %s", id)
		}
		if err := s.switchMode(ls, value); err != nil {
			return nil, err
		}
		return SetConfigOptionResponse{ConfigOptions: s.shownOptions(ls)}, nil
	default:
		id, _ := marshal(req.ConfigID)
		return nil, invalidParams("unknown config option %s", id)
	}
	ls.s.SetKnob(req.ConfigID, value)
	return SetConfigOptionResponse{ConfigOptions: s.shownOptions(ls)}, nil
}

// checkModelValue validates a Model or Thinking value.
func (s *Server) checkModelValue(ls *liveSession, id, value string, quoted []byte) error {
	model, ok := ls.s.Knob(optionModel)
	if !ok || s.opts.Models == nil || !s.opts.EditorConfig {
		id, _ := marshal(id)
		return invalidParams("unknown config option %s", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), modelListWait)
	defer cancel()
	ms := s.models(ctx, model)
	if id == optionModel {
		if !slices.ContainsFunc(ms, func(m ModelChoice) bool { return m.ID == value }) {
			return invalidParams("unknown model %s; the Model option lists the available ones", quoted)
		}
		return nil
	}
	if !slices.ContainsFunc(ms, func(m ModelChoice) bool { return m.ID == model && m.Thinking }) {
		return invalidParams("model %s takes no thinking switch", model)
	}
	if value != agent.ThinkingEnabled && value != agent.ThinkingDisabled {
		return invalidParams("unknown thinking value %s", quoted)
	}
	return nil
}

// modelListWait bounds the wait for a model list still being fetched.
const modelListWait = 3 * time.Second

// shownOptions returns the session's options and remembers their values
// as what the client was told (so only later changes are announced).
func (s *Server) shownOptions(ls *liveSession) []ConfigOption {
	ctx, cancel := context.WithTimeout(context.Background(), modelListWait)
	defer cancel()
	values := sessionValues(ls.s)
	opts := s.optionsWith(ctx, ls.s, values)
	// Every value is remembered, shown or not: a model switch may bring
	// the Thinking option in.
	shown := map[string]string{}
	for _, id := range []string{optionMode, optionModel, optionThinking, optionSandbox, optionNetwork, optionApproval} {
		if v, ok := values(id); ok {
			shown[id] = v
		}
	}
	s.mu.Lock()
	ls.shown = shown
	s.mu.Unlock()
	return opts
}

// optionChanged notes that option id now has value (from a logged event)
// and, with EditorConfig, sends config_option_update when the client was
// told otherwise. It never calls into the session (it runs inside the
// log's append), so the list is rebuilt from the values the client holds.
func (s *Server) optionChanged(ls *liveSession, id, value string) {
	if !s.opts.EditorConfig {
		return
	}
	s.mu.Lock()
	cur, known := ls.shown[id]
	if !known || cur == value {
		s.mu.Unlock()
		return
	}
	ls.shown[id] = value
	shown := make(map[string]string, len(ls.shown))
	for k, v := range ls.shown {
		shown[k] = v
	}
	s.mu.Unlock()
	opts := s.optionsFrom(ls.s, func(id string) (string, bool) {
		v, ok := shown[id]
		return v, ok
	})
	s.notify("session/update", SessionNotification{SessionID: ls.s.ID(), Update: ConfigOptionUpdate{UpdateConfigOption, opts}})
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
