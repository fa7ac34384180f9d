package acp

import (
	"cmp"
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/agent"
)

// Config option ids besides the knobs' (agent.Knob.ID).
const (
	// optionMode is the session mode as a config option (with
	// Options.EditorConfig).
	optionMode = "mode"
	// optionModel is the Model knob, which other requests read (images).
	optionModel = agent.KnobModel
)

// choice is one value of an option as the editor's user sees it.
type choice struct{ value, name, description string }

// choicesOf converts a knob's choices.
func choicesOf(cs []agent.Choice) []choice {
	out := make([]choice, len(cs))
	for i, c := range cs {
		out[i] = choice{c.Value, c.Name, c.Description}
	}
	return out
}

var (
	// sandboxChoices name the sandbox modes as the Sandbox menu does where
	// a backend exists (permission requests name them so too).
	sandboxChoices = builtinChoices(agent.KnobSandboxMode, "linux")
)

// builtinChoices are the choices of a built-in knob on goos.
func builtinChoices(id, goos string) []choice {
	for _, k := range agent.BuiltinKnobs() {
		if k.ID == id && k.Choices != nil {
			return choicesOf(k.Choices(goos))
		}
	}
	return nil
}

// knobOf returns the session's knob id.
func knobOf(s Knobs, id string) (agent.Knob, bool) {
	for _, k := range s.Knobs() {
		if k.ID == id {
			return k, true
		}
	}
	return agent.Knob{}, false
}

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

// modelChoices returns the Model menu (the offered models, model among
// them) and whether model takes a thinking switch.
func (s *Server) modelChoices(ctx context.Context, model string) ([]choice, bool) {
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
	return cs, thinks
}

// knobOption renders knob k's editor option with value v (false: not
// offered now: a model knob without a model list, a thinking switch the
// current model does not take).
func (s *Server) knobOption(ctx context.Context, k agent.Knob, v string, values optionValues) (ConfigOption, bool) {
	var cs []choice
	switch k.Values {
	case agent.ValuesModels, agent.ValuesThinking:
		model, ok := values(optionModel)
		if !ok || s.opts.Models == nil {
			return ConfigOption{}, false
		}
		models, thinks := s.modelChoices(ctx, model)
		if k.Values == agent.ValuesModels {
			cs = models
		} else if !thinks {
			return ConfigOption{}, false
		}
	}
	if cs == nil && k.Choices != nil {
		cs = choicesOf(k.Choices(runtime.GOOS))
	}
	return ConfigOption{ID: k.ID, Name: k.Option.Name, Description: k.Option.Description,
		Category: k.Option.Category, Type: "select", CurrentValue: v, Options: namedOptions(cs)}, true
}

// optionsFrom builds the option list from values; with EditorConfig the
// mode leads, and every option and value has a human name and a
// description.
func (s *Server) optionsFrom(sess settings, values optionValues) []ConfigOption {
	return s.optionsWith(context.Background(), sess, values)
}

// optionsWith is optionsFrom waiting at most until ctx ends for the model
// list.
func (s *Server) optionsWith(ctx context.Context, sess settings, values optionValues) []ConfigOption {
	if !s.opts.EditorConfig {
		return upstreamOptions(sess.Knobs(), values)
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
	knobs := slices.Clone(sess.Knobs())
	slices.SortStableFunc(knobs, func(a, b agent.Knob) int { return cmp.Compare(a.Option.Order, b.Option.Order) })
	for _, k := range knobs {
		if v, ok := values(k.ID); ok {
			if o, ok := s.knobOption(ctx, k, v, values); ok {
				out = append(out, o)
			}
		}
	}
	return out
}

// upstreamOptions is upstream's option list (acp-bridge § 9): the knobs
// with an upstream rendering, raw values as names.
func upstreamOptions(knobs []agent.Knob, values optionValues) []ConfigOption {
	var out []ConfigOption
	for _, k := range knobs {
		if k.Upstream == nil || k.Choices == nil {
			continue
		}
		if v, ok := values(k.ID); ok {
			var vs []string
			for _, c := range k.Choices(runtime.GOOS) {
				vs = append(vs, c.Value)
			}
			out = append(out, ConfigOption{ID: k.ID, Name: k.Upstream.Name, Description: k.Upstream.Description,
				Category: k.Upstream.Category, Type: "select", CurrentValue: v, Options: selectOptions(vs)})
		}
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
func (s *Server) setConfigOption(ctx context.Context, params json.RawMessage) (any, error) {
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
	if req.ConfigID == optionMode {
		if !s.opts.EditorConfig {
			return nil, &agent.UnknownKnobError{ID: req.ConfigID}
		}
		if err := s.switchMode(ls, value); err != nil {
			return nil, err
		}
		return SetConfigOptionResponse{ConfigOptions: s.shownOptions(ctx, ls)}, nil
	}
	if err := s.checkKnobValue(ctx, ls, req.ConfigID, value); err != nil {
		return nil, err
	}
	if err := ls.s.SetKnob(req.ConfigID, value); err != nil {
		return nil, err
	}
	return SetConfigOptionResponse{ConfigOptions: s.shownOptions(ctx, ls)}, nil
}

// checkKnobValue validates a knob's new value. An id the session has no
// option for is an *agent.UnknownKnobError; an editor knob is one unless
// the session offers it with EditorConfig, while a knob upstream renders
// is always known there and, not offered, allows no value (upstream's
// bridge knows both ids: acp-bridge § 7).
func (s *Server) checkKnobValue(ctx context.Context, ls *binding, id, value string) error {
	k, known := knobOf(ls.s, id)
	_, offered := ls.s.Knob(id)
	if !known || k.Upstream == nil && (!offered || !s.opts.EditorConfig) {
		return &agent.UnknownKnobError{ID: id}
	}
	switch k.Values {
	case agent.ValuesModels, agent.ValuesThinking:
		if s.opts.Models == nil {
			return &agent.UnknownKnobError{ID: id}
		}
		if err := s.checkModelValue(ctx, ls, k, value); err != nil {
			return err
		}
	}
	if !offered || !k.Allows(runtime.GOOS, value) {
		return &agent.KnobValueError{ID: id, Value: value}
	}
	return nil
}

// checkModelValue validates a value of a knob whose values are the model
// list's: a model it lists, or a thinking switch the current model takes.
func (s *Server) checkModelValue(ctx context.Context, ls *binding, k agent.Knob, value string) error {
	model, _ := ls.s.Knob(optionModel)
	ctx, cancel := context.WithTimeout(ctx, modelListWait)
	defer cancel()
	ms := s.models(ctx, model)
	if k.Values == agent.ValuesModels {
		if !slices.ContainsFunc(ms, func(m ModelChoice) bool { return m.ID == value }) {
			quoted, _ := marshal(value)
			return invalidParams("unknown model %s; the Model option lists the available ones", quoted)
		}
		return nil
	}
	if !slices.ContainsFunc(ms, func(m ModelChoice) bool { return m.ID == model && m.Thinking }) {
		return invalidParams("model %s takes no thinking switch", model)
	}
	return nil
}

// modelListWait bounds the wait for a model list still being fetched.
const modelListWait = 3 * time.Second

// shownOptions returns the session's options and remembers their values
// as what the client was told (so only later changes are announced).
func (s *Server) shownOptions(ctx context.Context, ls *binding) []ConfigOption {
	ctx, cancel := context.WithTimeout(ctx, modelListWait)
	defer cancel()
	values := sessionValues(ls.s)
	opts := s.optionsWith(ctx, ls.s, values)
	// Every value is remembered, shown or not: a model switch may bring
	// the Thinking option in.
	shown := map[string]string{}
	if v, ok := values(optionMode); ok {
		shown[optionMode] = v
	}
	for _, k := range ls.s.Knobs() {
		if v, ok := values(k.ID); ok {
			shown[k.ID] = v
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
func (s *Server) optionChanged(ls *binding, id, value string) {
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
