package capabilities_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// rawTool is a tool whose schema arrives as JSON Schema text.
type rawTool struct {
	name   string
	schema *capabilities.Schema
}

func (t rawTool) Name() string                 { return t.name }
func (t rawTool) Description() string          { return "raw" }
func (t rawTool) Schema() *capabilities.Schema { return t.schema }
func (rawTool) Traits() capabilities.Traits    { return capabilities.Traits{} }
func (t rawTool) Run(_ context.Context, c *capabilities.Call) (capabilities.Result, error) {
	return capabilities.TextResult("ran " + string(c.Args)), nil
}

// source is a changing tool set that counts its closes.
type source struct {
	mu     sync.Mutex
	tools  []capabilities.Tool
	closed atomic.Int32
}

func (s *source) Tools() []capabilities.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

func (s *source) set(ts ...capabilities.Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools = ts
}

func (s *source) Close(context.Context) error { s.closed.Add(1); return nil }

func mustRaw(t *testing.T, raw string) *capabilities.Schema {
	t.Helper()
	s, err := capabilities.RawSchema(json.RawMessage(raw))
	require.NoError(t, err)
	return s
}

func TestRawSchemaIsEmittedAsGivenAndValidated(t *testing.T) {
	s := mustRaw(t, `{"type": "object", "properties": {"path": {"type": "string", "minLength": 1}, "n": {"type": "integer", "maximum": 3}}, "required": ["path"], "additionalProperties": false}`)
	b, err := s.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, `{"type":"object","properties":{"path":{"type":"string","minLength":1},"n":{"type":"integer","maximum":3}},"required":["path"],"additionalProperties":false}`, string(b), "compacted, key order kept")

	assert.Empty(t, s.Validate(json.RawMessage(`{"path":"a","n":2}`)))
	assert.Equal(t, []string{`"arguments" missing property 'path'`}, s.Validate(json.RawMessage(`{}`)))
	assert.Equal(t, []string{`"n" maximum: got 9, want 3`}, s.Validate(json.RawMessage(`{"path":"a","n":9}`)))
	assert.Equal(t, []string{`"arguments" additional properties 'x' not allowed`}, s.Validate(json.RawMessage(`{"path":"a","x":1}`)))
	assert.Equal(t, []string{`"arguments" must be an object`}, s.Validate(json.RawMessage(`"text"`)))
	assert.Equal(t, []string{`"arguments" missing property 'path'`, `"n" maximum: got 9, want 3`}, s.Validate(json.RawMessage(`{"n":9}`)),
		"a missing argument is reported besides the validator's first violation")

	for _, bad := range []string{`{"type":"string"}`, `[1]`, `{"type":"object","properties":{"a":{"$ref":"http://example.com/x.json"}}}`, `{"type":"object","minProperties":"x"}`, `{`} {
		_, err := capabilities.RawSchema(json.RawMessage(bad))
		assert.Error(t, err, bad)
	}
}

func TestRawSchemaViolationsNameTheArgumentPath(t *testing.T) {
	nested := mustRaw(t, `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"integer"}},"required":["b","c"]}}}`)
	assert.Equal(t, []string{`"a.b" got string, want integer`}, nested.Validate(json.RawMessage(`{"a":{"b":"x"}}`)))
	assert.Equal(t, []string{`"a" missing properties 'b', 'c'`}, nested.Validate(json.RawMessage(`{"a":{}}`)))
	assert.Empty(t, nested.Validate(json.RawMessage(`{"a":{"b":2,"c":null}}`)))

	closed := mustRaw(t, `{"type":"object","additionalProperties":false}`)
	assert.Equal(t, []string{`"arguments" additional properties 'x', 'y' not allowed`}, closed.Validate(json.RawMessage(`{"x":1,"y":2}`)))

	num := mustRaw(t, `{"type":"object","properties":{"lo":{"type":"number","minimum":0.5},"hi":{"type":"number","exclusiveMaximum":1}}}`)
	assert.Equal(t, []string{`"lo" minimum: got 0.25, want 0.5`}, num.Validate(json.RawMessage(`{"lo":0.25}`)))
	assert.Equal(t, []string{`"hi" exclusiveMaximum: got 1, want 1`}, num.Validate(json.RawMessage(`{"hi":1}`)))

	// An MCP server's draft-04 or 2019-09 "$schema" does not make every
	// call fail: the schema is validated as 2020-12 and emitted as given.
	old := mustRaw(t, `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"type":["string","null"]}}}`)
	assert.Equal(t, []string{`"a" got number, want one of string, null`}, old.Validate(json.RawMessage(`{"a":1}`)))
	assert.Empty(t, old.Validate(json.RawMessage(`{"a":null}`)))
	b, err := old.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"$schema":"http://json-schema.org/draft-04/schema#"`)

	ref := mustRaw(t, `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"object","properties":{"y":{"enum":["p","q"]}}}}}`)
	assert.Empty(t, ref.Validate(json.RawMessage(`{"a":{"y":"p"}}`)))
	assert.Len(t, ref.Validate(json.RawMessage(`{"a":{"y":"z"}}`)), 1, "a local $ref is followed")
}

// BenchmarkRawSchema is the cost of turning one MCP tool's input schema
// into a validator (paid when a server lists its tools, not at startup).
func BenchmarkRawSchema(b *testing.B) {
	raw := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1},"n":{"type":"integer","maximum":3},"tags":{"type":"array","items":{"type":"string"}}},"required":["path"],"additionalProperties":false}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := capabilities.RawSchema(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRegistryOffersAndRunsAttachedSourcesTools(t *testing.T) {
	reg := capabilities.NewRegistry(echo{})
	src := &source{}
	reg.Attach(src)
	require.Len(t, reg.Tools(), 1)

	raw := rawTool{name: "mcp__s__go", schema: mustRaw(t, `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}
	src.set(raw, rawTool{name: "echo", schema: mustRaw(t, `{"type":"object"}`)}, rawTool{name: "a_first", schema: mustRaw(t, `{"type":"object"}`)})
	var names []string
	for _, tl := range reg.Tools() {
		names = append(names, tl.Name())
	}
	assert.Equal(t, []string{"a_first", "echo", "mcp__s__go"}, names, "wire order; the registry's own tool wins a clash")
	got, ok := reg.Lookup("echo")
	require.True(t, ok)
	assert.Equal(t, "what to say", got.Schema().Properties[0].Schema.Description)

	env := testEnv{session.NewLog(session.Header{ID: "s"}, func() int64 { return 0 }, nil)}
	out := reg.Execute(context.Background(), env, "c1", "mcp__s__go", `{"q":"x"}`)
	assert.False(t, out.IsError)
	assert.Equal(t, `ran {"q":"x"}`, out.Content[0].Text)
	out = reg.Execute(context.Background(), env, "c2", "mcp__s__go", `{"q":1}`)
	require.True(t, out.IsError)
	assert.Equal(t, "INVALID_ARGS", out.Error.Code)
	assert.Equal(t, `Error: invalid arguments: "q" got number, want string`, out.Content[0].Text)

	src.set()
	out = reg.Execute(context.Background(), env, "c3", "mcp__s__go", `{"q":"x"}`)
	assert.Equal(t, "UNKNOWN_TOOL", out.Error.Code, "a tool that went away is unknown")

	require.NoError(t, reg.Close(context.Background()))
	assert.Equal(t, int32(1), src.closed.Load(), "sources close with the registry")
	late := &source{}
	reg.Attach(late)
	assert.Equal(t, int32(1), late.closed.Load(), "a source attached after close is closed at once")
}

type testEnv struct{ log *session.Log }

func (e testEnv) Cwd() string       { return "/" }
func (e testEnv) Log() *session.Log { return e.log }

func (e testEnv) Host() *capabilities.Host { return nil }
