package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-acp/dsh-acp/session"
)

// Knob is one per-session switch, declared once (BuiltinKnobs, or
// Config.Knobs) and read everywhere: the session folds, switches, anchors,
// restores, inherits and narrates it from this value, and the ACP bridge
// offers, validates, renders and announces it from the same value.
//
// A switch is logged as the event Event with the one-field payload
// {Field: value}; the knob's value is the last such event in the
// session's own log, else its composition default.
type Knob struct {
	// ID names the knob: the config option id on the wire, the key of a
	// knob/pending record.
	ID string
	// Event is the log event type of a switch.
	Event string
	// Field is the name of the event payload's one field.
	Field string
	// Default returns the knob's default in the composition cfg describes
	// and whether that composition offers the knob at all.
	Default func(cfg Config) (string, bool)
	// Choices are the allowed values on system goos ("linux", …), in menu
	// order. Nil for a knob whose values are dynamic (Values says where
	// they come from).
	Choices func(goos string) []Choice
	// Values says where the allowed values come from and when the knob is
	// offered: its Choices (the zero value), the composition's model list,
	// or its Choices while the current model takes a thinking switch.
	Values KnobValues
	// Option is how the knob reads as a config option in an editor's
	// menus.
	Option KnobOption
	// Upstream, when set, is the knob's config option in upstream
	// compositions (acp-bridge § 9: raw values as names, upstream's
	// descriptions), whose bridge knows its id even where the composition
	// does not offer it. Nil: the knob is an editor option only.
	Upstream *KnobOption
	// Durable records a switch made while idle as knob/pending at once
	// (with Config.DurableKnobs), so it survives a restart before the next
	// turn anchors it.
	Durable bool
	// Narrowest lists the knob's values from the narrowest when it is a
	// boundary a child agent inherits (the narrower of its parent's switch
	// and fold); nil: a child does not inherit it.
	Narrowest []string
	// Narration, when set, tells the model before a step that the knob
	// changed since it was last told.
	Narration *KnobNarration
}

// Choice is one value of a knob as an editor's user sees it.
type Choice struct {
	// Value is the wire value.
	Value string
	// Name is the value's menu name.
	Name string
	// Description says what the value does.
	Description string
}

// KnobOption is a knob's config option rendering.
type KnobOption struct {
	// Name and Description are the option's.
	Name, Description string
	// Category is the option's category ("" none).
	Category string
	// Order places the option in the editor's menu, lowest first, after
	// the session mode.
	Order int
}

// KnobValues says where a knob's allowed values come from.
type KnobValues int

// Sources of a knob's values.
const (
	// ValuesChoices: the knob's Choices.
	ValuesChoices KnobValues = iota
	// ValuesModels: the models the composition lists (the Model option).
	ValuesModels
	// ValuesThinking: the knob's Choices, offered only while the current
	// model takes a thinking switch.
	ValuesThinking
)

// KnobNarration is the notice that tells the model about a switch.
type KnobNarration struct {
	// Source is the plugin the notice comes from (its context/message
	// source); the narrator's name is Source + " narrator".
	Source string
	// Told returns the value the model was last told, read from the
	// latest request header. Nil: the knob's value when that header was
	// logged.
	Told func(h Header) string
	// Text is the notice for a change from told to current; byUser says
	// the switch is logged after the latest request header.
	Text func(told, current string, byUser bool) string
}

// ErrUnknownKnob is the error (wrapped by *UnknownKnobError) for a knob id
// the session does not have.
var ErrUnknownKnob = errors.New("unknown knob")

// ErrKnobValue is the error (wrapped by *KnobValueError) for a value a
// knob does not allow.
var ErrKnobValue = errors.New("value not allowed")

// UnknownKnobError names a knob id the session does not have.
type UnknownKnobError struct{ ID string }

func (e *UnknownKnobError) Error() string { return fmt.Sprintf("unknown config option %q", e.ID) }

// Unwrap returns ErrUnknownKnob.
func (e *UnknownKnobError) Unwrap() error { return ErrUnknownKnob }

// KnobValueError names a value a knob does not allow.
type KnobValueError struct{ ID, Value string }

func (e *KnobValueError) Error() string { return fmt.Sprintf("unknown %s value %q", e.ID, e.Value) }

// Unwrap returns ErrKnobValue.
func (e *KnobValueError) Unwrap() error { return ErrKnobValue }

// Payload returns the data of the event that switches k to value:
// {Field: value}.
func (k Knob) Payload(value string) map[string]string { return map[string]string{k.Field: value} }

// Decode returns the value an event of k's type switches to; false when
// the payload has no string in k's field (matched as encoding/json
// matches a struct field: exactly, else ignoring case).
func (k Knob) Decode(e session.Event) (string, bool) {
	if p, ok := e.Payload.(map[string]string); ok && len(p) == 1 {
		if v, ok := p[k.Field]; ok {
			return v, true // appended by SetKnob: no decoding
		}
	}
	var strs map[string]string
	if json.Unmarshal(e.Data, &strs) == nil {
		if v, ok := strs[k.Field]; ok {
			return v, true
		}
	}
	var fields map[string]json.RawMessage
	if e.Decode(&fields) != nil {
		return "", false
	}
	raw, ok := fields[k.Field]
	if !ok {
		for name, r := range fields {
			if strings.EqualFold(name, k.Field) {
				raw, ok = r, true
				break
			}
		}
	}
	var v string
	if ok && string(raw) != "null" && json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return v, true
}

// Allows reports whether value is one of k's Choices (true for a knob
// whose values are dynamic: its offerer checks them).
func (k Knob) Allows(goos, value string) bool {
	if k.Choices == nil || k.Values == ValuesModels {
		return true
	}
	return slices.ContainsFunc(k.Choices(goos), func(c Choice) bool { return c.Value == value })
}

// knobs returns the runtime's knobs, in anchoring order.
func (rt *Runtime) knobs() []Knob {
	if rt.cfg.Knobs != nil {
		return rt.cfg.Knobs
	}
	return builtinKnobs[:]
}

// knob returns the runtime's knob id.
func (rt *Runtime) knob(id string) (Knob, bool) {
	for _, k := range rt.knobs() {
		if k.ID == id {
			return k, true
		}
	}
	return Knob{}, false
}

// Knobs returns the knobs the session's runtime registers (offered in its
// composition or not: Session.Knob says), in anchoring order. The slice
// must not be modified.
func (s *Session) Knobs() []Knob { return s.rt.knobs() }
