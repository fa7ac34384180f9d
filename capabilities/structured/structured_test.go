package structured_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/agenttest"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/structured"
	"github.com/dsh-acp/dsh-acp/capabilities/subagent"
	"github.com/dsh-acp/dsh-acp/session"
)

func TestSchemaOutsideTheSubsetNamesEveryViolation(t *testing.T) {
	for schema, want := range map[string]string{
		`[]`:                `schema must be a schema object`,
		`{"type":"string"}`: `schema.type must be "object" (structured output is object-rooted)`,
		`{"type":["object","null"]}`: `schema.type must be a single type string (type arrays are not supported); ` +
			`schema.type must be "object" (structured output is object-rooted)`,
		`{"type":"object","properties":{"a":{"type":"date"}}}`:              `schema.properties.a.type must be one of object/array/string/number/integer/boolean/null`,
		`{"type":"object","oneOf":[]}`:                                      `schema.oneOf is not a supported keyword (subset: type/properties/required/additionalProperties/items/enum/const + annotations)`,
		`{"type":"object","required":["x"],"properties":{}}`:                `schema.required names "x" which is not in properties`,
		`{"type":"object","required":"x"}`:                                  `schema.required must be an array of strings`,
		`{"type":"object","additionalProperties":{}}`:                       `schema.additionalProperties must be a boolean`,
		`{"type":"object","properties":[]}`:                                 `schema.properties must be an object of schemas`,
		`{"type":"object","properties":{"a":3}}`:                            `schema.properties.a must be a schema object`,
		`{"type":"object","properties":{"a":{"type":"string","enum":[]}}}`:  `schema.properties.a.enum must be a non-empty array of scalars`,
		`{"type":"object","properties":{"a":{"type":"string","const":{}}}}`: `schema.properties.a.const must be a scalar`,
		`{"type":"object","properties":{"a":{"type":"string","items":{}}}}`: `schema.properties.a.items is not supported on type "string"`,
		`{"type":"object","description":3,"title":false}`:                   `schema.description must be a string; schema.title must be a string`,
		`{"type":"object","properties":{"l":{"type":"array","items":"x"}}}`: `schema.properties.l.items must be a schema object`,
	} {
		_, err := structured.Parse(json.RawMessage(schema))
		var ue *structured.UnsupportedError
		require.ErrorAs(t, err, &ue, schema)
		assert.Equal(t, "unsupported output schema: "+want, err.Error(), schema)
	}
	_, err := structured.Parse(json.RawMessage(`{"type":"object","title":"t","properties":{"n":{"type":"integer","default":1,"examples":[1,2]},` +
		`"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}},"required":["n"],"additionalProperties":false}`))
	require.NoError(t, err)
}

func TestValueViolationsArePathQualified(t *testing.T) {
	s, err := structured.Parse(json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"},` +
		`"x":{"type":"number"},"ok":{"type":"boolean"},"nil":{"type":"null"},"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},` +
		`"kind":{"const":"k"}},"required":["name","n"],"additionalProperties":false}`))
	require.NoError(t, err)
	assert.Equal(t, []string{`"value" must be an object`}, s.Validate(json.RawMessage(`[1]`)))
	assert.Equal(t, []string{`missing required property "value.name"`, `missing required property "value.n"`}, s.Validate(json.RawMessage(`{}`)))
	assert.Equal(t, []string{
		`"value.name" must be a string`, `"value.n" must be an integer`, `"value.x" must be a finite number`, `"value.ok" must be a boolean`,
		`"value.nil" must be null`, `"value.tags[1]" must be one of ["a","b"]`, `"value.kind" must be "k"`,
		`"value.extra" is not a declared property (additionalProperties: false)`,
	}, s.Validate(json.RawMessage(`{"name":1,"n":1.5,"x":"1","ok":0,"nil":false,"tags":["a","c"],"kind":"j","extra":1}`)))
	assert.Empty(t, s.Validate(json.RawMessage(`{"name":"a","n":2,"tags":["b"],"kind":"k"}`)))
}

// model: a structured child answers "CAPTURE <json>" by calling
// structured_output with that JSON, then (after the result) tries another
// tool; "BAD" captures invalid arguments once and then valid ones; "PROSE"
// never captures.
func model(req *llm.Request) agenttest.Reply {
	last := agenttest.LastUser(req)
	if agenttest.LastIsToolResult(req) {
		if strings.HasPrefix(last, "BAD") && countResults(req) == 1 {
			return agenttest.Reply{Calls: []agenttest.Call{{Name: "structured_output", Args: `{"answer":"fixed"}`}}}
		}
		return agenttest.Reply{Text: "should not be asked again"}
	}
	switch {
	case strings.HasPrefix(last, "CAPTURE "):
		return agenttest.Reply{Calls: []agenttest.Call{
			{Name: "structured_output", Args: strings.TrimPrefix(last, "CAPTURE ")},
			{Name: "echo", Args: `{}`},
		}}
	case strings.HasPrefix(last, "BAD"):
		return agenttest.Reply{Calls: []agenttest.Call{{Name: "structured_output", Args: `{"answer":3}`}}}
	}
	return agenttest.Reply{Text: "plain prose"}
}

func countResults(req *llm.Request) int {
	n := 0
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Type == session.BlockToolResult {
				n++
			}
		}
	}
	return n
}

type echo struct{}

func (echo) Name() string                 { return "echo" }
func (echo) Description() string          { return "echo" }
func (echo) Schema() *capabilities.Schema { return capabilities.Object() }
func (echo) Traits() capabilities.Traits  { return capabilities.Traits{} }
func (echo) Run(context.Context, *capabilities.Call) (capabilities.Result, error) {
	return capabilities.TextResult("echoed"), nil
}

func results(t *testing.T, events []session.Event) []session.ToolResult {
	var out []session.ToolResult
	for _, e := range events {
		if e.Type == session.TypeToolResult {
			var r session.ToolResult
			require.NoError(t, e.Decode(&r))
			out = append(out, r)
		}
	}
	return out
}

func TestStructuredChildCapturesThenStops(t *testing.T) {
	env := agenttest.New(t, model, func(capabilities.Env) []capabilities.Tool { return []capabilities.Tool{echo{}} })
	parent := env.Session(t)
	schema, err := structured.Parse(json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`))
	require.NoError(t, err)
	out, err := subagent.Run(context.Background(), parent, subagent.Request{Prompt: `CAPTURE {"answer":"42"}`, Schema: schema})
	require.NoError(t, err)
	assert.Equal(t, subagent.StopCompleted, out.Stop)
	assert.JSONEq(t, `{"answer":"42"}`, string(out.Value))

	kid := env.Children(t, parent.ID())[0]
	_, events, err := env.Store.Load(context.Background(), kid.ID)
	require.NoError(t, err)
	rs := results(t, events)
	require.Len(t, rs, 2)
	assert.Equal(t, structured.Recorded, rs[0].Content[0].Text)
	assert.Equal(t, "Error: structured output already recorded: the run is complete, so `echo` is not executed", rs[1].Content[0].Text)
	assert.Equal(t, 1, countSteps(events), "the continuation veto stops the run after the capturing step")
	// structured_output is offered last, to this child only.
	hdr := string(events[3].Data)
	assert.Less(t, strings.Index(hdr, `"name":"echo"`), strings.Index(hdr, `"name":"structured_output"`))
	_, offered := parent.Tools().Lookup(structured.ToolName)
	assert.False(t, offered, "the parent never sees structured_output")
}

func countSteps(events []session.Event) int {
	n := 0
	for _, e := range events {
		if e.Type == session.TypeStepStart {
			n++
		}
	}
	return n
}

func TestInvalidCaptureIsAnInvalidArgumentsError(t *testing.T) {
	env := agenttest.New(t, model, func(capabilities.Env) []capabilities.Tool { return nil })
	parent := env.Session(t)
	schema, err := structured.Parse(json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`))
	require.NoError(t, err)
	out, err := subagent.Run(context.Background(), parent, subagent.Request{Prompt: "BAD", Schema: schema})
	require.NoError(t, err)
	assert.JSONEq(t, `{"answer":"fixed"}`, string(out.Value))
	_, events, err := env.Store.Load(context.Background(), env.Children(t, parent.ID())[0].ID)
	require.NoError(t, err)
	rs := results(t, events)
	require.Len(t, rs, 2)
	assert.Equal(t, `Error: invalid arguments: "value.answer" must be a string`, rs[0].Content[0].Text)
	assert.Equal(t, &session.ErrorInfo{Name: "ToolArgsError", Code: "INVALID_ARGS"}, rs[0].Error)
}

func TestFinishingWithoutACaptureIsAnError(t *testing.T) {
	env := agenttest.New(t, model, func(capabilities.Env) []capabilities.Tool { return nil })
	parent := env.Session(t)
	schema, err := structured.Parse(json.RawMessage(`{"type":"object"}`))
	require.NoError(t, err)
	out, err := subagent.Run(context.Background(), parent, subagent.Request{Prompt: "PROSE", Schema: schema})
	require.NoError(t, err)
	assert.Equal(t, subagent.StopError, out.Stop)
	assert.Nil(t, out.Value)
	assert.Equal(t, "plain prose", out.Text)
}

func TestNudgedChildCapturesOnItsSecondChance(t *testing.T) {
	m := func(req *llm.Request) agenttest.Reply {
		for _, msg := range req.Messages {
			for _, b := range msg.Content {
				if b.Type == session.BlockText && b.Text == structured.Nudge {
					return agenttest.Reply{Calls: []agenttest.Call{{Name: "structured_output", Args: `{"answer":"late"}`}}}
				}
			}
		}
		return agenttest.Reply{Text: "prose first"}
	}
	env := agenttest.New(t, m, func(capabilities.Env) []capabilities.Tool { return nil })
	parent := env.Session(t)
	schema, err := structured.Parse(json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`))
	require.NoError(t, err)
	out, err := subagent.Run(context.Background(), parent, subagent.Request{Prompt: "PROSE", Schema: schema, Nudges: 1})
	require.NoError(t, err)
	assert.Equal(t, subagent.StopCompleted, out.Stop)
	assert.JSONEq(t, `{"answer":"late"}`, string(out.Value))
	_, events, err := env.Store.Load(context.Background(), env.Children(t, parent.ID())[0].ID)
	require.NoError(t, err)
	steered := 0
	for _, e := range events {
		if e.Type == session.TypeSteeringMessage {
			steered++
			assert.Contains(t, string(e.Data), `"plugin":"structured-output"`)
		}
	}
	assert.Equal(t, 1, steered)

	// Without nudges (upstream) the same child settles as an error.
	out, err = subagent.Run(context.Background(), parent, subagent.Request{Prompt: "PROSE", Schema: schema})
	require.NoError(t, err)
	assert.Equal(t, subagent.StopError, out.Stop)
}
