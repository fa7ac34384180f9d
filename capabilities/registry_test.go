package capabilities_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

type echo struct{ err error }

func (echo) Name() string        { return "echo" }
func (echo) Description() string { return "echo" }
func (echo) Schema() *capabilities.Schema {
	return capabilities.Object(
		capabilities.Req("text", capabilities.String("what to say")),
		capabilities.Opt("times", capabilities.Number("")),
		capabilities.Opt("items", capabilities.Array("", capabilities.Object(
			capabilities.Req("status", &capabilities.Schema{Type: "string", Enum: []string{"a", "b"}})))),
	)
}
func (echo) Traits() capabilities.Traits { return capabilities.Traits{} }
func (e echo) Run(_ context.Context, c *capabilities.Call) (capabilities.Result, error) {
	if e.err != nil {
		return capabilities.Result{}, e.err
	}
	return capabilities.Result{Content: []session.Block{session.TextBlock(string(c.Args))}, Meta: json.RawMessage(`{"m":1}`)}, nil
}

func TestSchemaKeyOrder(t *testing.T) {
	b, err := echo{}.Schema().MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, `{"type":"object","properties":{"text":{"type":"string","description":"what to say"},"times":{"type":"number"},"items":{"type":"array","items":{"type":"object","properties":{"status":{"type":"string","enum":["a","b"]}},"required":["status"]}}},"required":["text"]}`, string(b))
}

func TestExecutePipeline(t *testing.T) {
	reg := capabilities.NewRegistry(echo{})
	ctx := context.Background()
	out := reg.Execute(ctx, nil, "c", "echo", "")
	require.Equal(t, `Error: invalid arguments: missing required property "text"`, out.Content[0].Text)
	require.Equal(t, &session.ErrorInfo{Name: "ToolArgsError", Code: "INVALID_ARGS"}, out.Error)

	out = reg.Execute(ctx, nil, "c", "echo", `{"text":1,"times":"x","items":[{"status":"c"},{}]}`)
	require.Equal(t, `Error: invalid arguments: "text" must be a string; "times" must be a number; "items[0].status" must be one of ["a","b"]; missing required property "items[1].status"`, out.Content[0].Text)

	out = reg.Execute(ctx, nil, "c", "echo", `not json`)
	require.Equal(t, `Error: invalid arguments: "arguments" must be an object`, out.Content[0].Text)

	out = reg.Execute(ctx, nil, "c", "nope", `{}`)
	require.Equal(t, `Error: unknown tool "nope"`, out.Content[0].Text)
	require.Equal(t, &session.ErrorInfo{Name: "ToolNotFoundError", Code: "UNKNOWN_TOOL"}, out.Error)

	out = reg.Execute(ctx, nil, "c", "echo", `{ "text" : "<hi>" }`)
	require.False(t, out.IsError)
	require.Equal(t, `{"text":"<hi>"}`, out.Content[0].Text, "arguments reach the tool compacted, HTML literal")
	require.JSONEq(t, `{"m":1}`, string(out.Meta))

	coded := capabilities.NewRegistry(echo{err: &capabilities.CodedError{Name: "FsError", Code: "FS_X", Message: "boom"}})
	out = coded.Execute(ctx, nil, "c", "echo", `{"text":"a"}`)
	require.Equal(t, "Error: boom", out.Content[0].Text)
	require.Equal(t, &session.ErrorInfo{Name: "FsError", Code: "FS_X"}, out.Error)

	plain := capabilities.NewRegistry(echo{err: errors.New("plain")})
	out = plain.Execute(ctx, nil, "c", "echo", `{"text":"a"}`)
	require.Equal(t, "Error: plain", out.Content[0].Text)
	require.Nil(t, out.Error, "plain errors carry no error field")
}

// A registry derived for one agent (a structured child's) keeps all that
// its base is composed of, not only the tools: a result over the spill
// cap is still saved and bounded, a call still stops at its time budget,
// the project's sections still reach the prompt, and an attached source's
// tools are still offered (and closed once).
func TestWithCarriesTheWholeComposition(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	base := capabilities.NewRegistry(big{lines: 5000}, sleeper{}).
		WithSpill(capabilities.Spill{Cap: 4096, Dir: func(capabilities.Env) string { return dir }}).
		WithTimeouts(capabilities.Timeouts{PerTool: map[string]time.Duration{"sleep": 100 * time.Millisecond}}).
		WithSections(capabilities.Section{Name: "project:instructions", Order: 120, Text: "AGENTS.md says: run make check"})
	src := &source{}
	src.set(rawTool{name: "mcp__s__go", schema: mustRaw(t, `{"type":"object"}`)})
	base.Attach(src)

	child := base.With(echo{})
	var names []string
	for _, tl := range child.Tools() {
		names = append(names, tl.Name())
	}
	assert.Equal(t, []string{"big", "mcp__s__go", "sleep", "echo"}, names, "the base's tools, its source's, then the extra one")

	out := child.Execute(context.Background(), spillEnv{t.TempDir()}, "c1", "big", "{}")
	require.False(t, out.IsError)
	assert.Less(t, len(out.Content[0].Text), 4096+600, "the spill step carries over")
	assert.FileExists(t, filepath.Join(dir, "c1.txt"))

	out = child.Execute(context.Background(), spillEnv{}, "c2", "sleep", "{}")
	assert.Equal(t, &session.ErrorInfo{Name: "ToolTimeoutError", Code: "TOOL_TIMEOUT"}, out.Error, "the time budgets carry over")

	require.Len(t, child.Sections(), 1)
	assert.Contains(t, child.Sections()[0].Text, "AGENTS.md says", "the prompt sections carry over")

	require.NoError(t, child.Close(context.Background()))
	require.NoError(t, base.Close(context.Background()))
	assert.Equal(t, int32(1), src.closed.Load(), "a shared source closes once")
}
