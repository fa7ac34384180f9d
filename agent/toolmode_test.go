package agent

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/replay"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// namedTool is a tool with a name and, optionally, a prompt section.
type namedTool struct{ name string }

func (t namedTool) Name() string                 { return t.name }
func (t namedTool) Description() string          { return t.name }
func (t namedTool) Schema() *capabilities.Schema { return capabilities.Object() }
func (t namedTool) Traits() capabilities.Traits {
	return capabilities.Traits{Program: t.name == "run_code"}
}
func (t namedTool) Run(context.Context, *capabilities.Call) (capabilities.Result, error) {
	return capabilities.TextResult("ok"), nil
}
func (t namedTool) PromptSection() capabilities.Section {
	return capabilities.Section{Name: "tool:" + t.name, Order: 100, Text: "SECTION OF " + t.name}
}

func TestToolModeKnobSwitchesWhatTheModelIsOffered(t *testing.T) {
	now := int64(0)
	var chunks []llm.Chunk
	for _, raw := range []string{`{"type":"block-start","index":0,"blockType":"text"}`, `{"type":"text-delta","index":0,"text":"ok"}`,
		`{"type":"block-end","index":0,"block":{"type":"text","text":"ok"}}`, `{"type":"finish","reason":{"kind":"stop"}}`} {
		var c llm.Chunk
		require.NoError(t, c.UnmarshalJSON([]byte(raw)))
		chunks = append(chunks, c)
	}
	p := replay.NewFromScripts(replay.Script{{Kind: replay.KindChunks, Chunks: chunks}})
	rt := NewRuntime(Config{Model: "m", Provider: p, Clock: func() int64 { now++; return now }, NewID: session.NewID, Log: zerolog.Nop(),
		ToolModeKnob: true,
		Tools: func(capabilities.Env) *capabilities.Registry {
			return capabilities.NewRegistry(namedTool{"bash"}, namedTool{"read"}, namedTool{"run_code"})
		}})
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	require.NoError(t, err)
	names := func() []string {
		var out []string
		for _, tl := range s.header().Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	mode, ok := s.Knob(KnobToolMode)
	require.True(t, ok)
	require.Equal(t, ToolModeNative, mode, "native by default")
	require.Equal(t, []string{"bash", "read"}, names())
	require.NotContains(t, s.system(), "SECTION OF run_code", "no SDK section while native")

	s.SetKnob(KnobToolMode, ToolModeCode)
	require.Equal(t, []string{"run_code"}, names())
	require.Contains(t, s.system(), "SECTION OF run_code")
	require.Contains(t, s.system(), "SECTION OF bash", "the native tools' sections stay in code mode")

	s.SetKnob(KnobToolMode, ToolModeBoth)
	require.Equal(t, []string{"bash", "read", "run_code"}, names())

	// The switch is logged like the other knobs once a turn anchors it.
	s.SetKnob(KnobToolMode, ToolModeCode)
	s.Prompt(context.Background(), "hi")
	found := false
	for _, e := range s.Log().Events() {
		if e.Type == TypeToolModeSet {
			found = true
			require.JSONEq(t, `{"mode":"code"}`, string(e.Data))
		}
	}
	require.True(t, found, "tools/mode is in the log")
}
