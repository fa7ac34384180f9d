package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/session"
)

// TestSandboxMenuSaysWhereCommandsFailClosed checks the menu per system:
// unchanged where a backend exists, a note on both confined modes (and not
// on Full access) on Windows.
func TestSandboxMenuSaysWhereCommandsFailClosed(t *testing.T) {
	want := sandboxChoices()
	for _, goos := range []string{"linux", "darwin"} {
		for i, c := range sandboxMenu(goos) {
			if c != want[i] {
				t.Errorf("%s: %q changed to %q", goos, want[i].Description, c.Description)
			}
		}
	}
	for _, c := range sandboxMenu("windows") {
		has := strings.HasSuffix(c.Description, NoSandboxNote)
		if want := c.Value != "danger-full-access"; has != want {
			t.Errorf("windows %s: note present = %v, want %v", c.Value, has, want)
		}
	}
}

// TestKnobRegistryIsConsistent checks every built-in knob against what
// the rest of the runtime relies on: unique ids and event types, a
// payload that decodes back to its value, inheritance orders that list
// exactly the allowed values, and no knob event type the log reserves.
func TestKnobRegistryIsConsistent(t *testing.T) {
	ids, events := map[string]bool{}, map[string]bool{}
	for _, k := range BuiltinKnobs() {
		if ids[k.ID] || events[k.Event] {
			t.Errorf("knob %s: id or event type %s registered twice", k.ID, k.Event)
		}
		ids[k.ID], events[k.Event] = true, true
		if k.ID == knobMode {
			t.Errorf("knob %s: the id names the session mode in knob/pending", k.ID)
		}
		if k.Default == nil || k.Option.Name == "" || k.Field == "" {
			t.Errorf("knob %s: incomplete definition", k.ID)
		}
		for _, v := range []string{"x", `"q" <&>`, ""} {
			e := session.Event{Type: k.Event, Data: session.Data(k.Payload(v))}
			if got, ok := k.Decode(e); !ok || got != v {
				t.Errorf("knob %s: payload of %q decodes to %q, %v", k.ID, v, got, ok)
			}
		}
		if k.Narrowest != nil {
			if len(k.Narrowest) != len(k.Choices("linux")) {
				t.Errorf("knob %s: Narrowest %v does not order its choices", k.ID, k.Narrowest)
			}
			for _, v := range k.Narrowest {
				if !k.Allows("linux", v) {
					t.Errorf("knob %s: Narrowest lists %q, not an allowed value", k.ID, v)
				}
			}
		}
	}
}

// TestKnobDecodeRefusesWhatTheFoldMustSkip: a payload whose field is not
// a string does not switch the knob; a misspelt case still does, as
// encoding/json decodes a struct.
func TestKnobDecodeRefusesWhatTheFoldMustSkip(t *testing.T) {
	k := builtinKnobs[0]
	for data, want := range map[string]string{`{"mode":7}`: "!", `[1]`: "!", `{"MODE":"read-only"}`: "read-only", `{"other":"x"}`: ""} {
		got, ok := k.Decode(session.Event{Type: k.Event, Data: []byte(data)})
		if !ok {
			got = "!"
		}
		if got != want {
			t.Errorf("%s: decoded %q, want %q", data, got, want)
		}
	}
}

// BenchmarkKnobDecode measures reading a knob's value from its latest
// event: appended in this process (the payload at hand) and loaded from a
// store (decoded), against decoding the same data into a struct.
func BenchmarkKnobDecode(b *testing.B) {
	k := builtinKnobs[0]
	appended := session.Event{Type: k.Event, Data: session.Data(k.Payload("read-only")), Payload: k.Payload("read-only")}
	loaded := session.Event{Type: k.Event, Data: appended.Data}
	for _, c := range []struct {
		name string
		e    session.Event
	}{{"appended", appended}, {"loaded", loaded}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if v, ok := k.Decode(c.e); !ok || v != "read-only" {
					b.Fatal(v)
				}
			}
		})
	}
	b.Run("struct", func(b *testing.B) {
		for range b.N {
			var v struct {
				Mode string `json:"mode"`
			}
			if loaded.Decode(&v) != nil || v.Mode != "read-only" {
				b.Fatal(v)
			}
		}
	})
}

// BenchmarkLoggedKnob is a session's read of a knob its log has switched:
// the value is decoded from the event once, not at every read.
func BenchmarkLoggedKnob(b *testing.B) {
	var now int64
	rt := NewRuntime(Config{Model: "m", Provider: newScripted(nil), Clock: func() int64 { now++; return now },
		NewID: func() string { return "s" }, Log: zerolog.Nop()})
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	if err != nil {
		b.Fatal(err)
	}
	k := builtinKnobs[0]
	s.Log().Append(k.Event, k.Payload("read-only"))
	for b.Loop() {
		if v := s.loggedKnob(k.ID); v != "read-only" {
			b.Fatal(v)
		}
	}
}
