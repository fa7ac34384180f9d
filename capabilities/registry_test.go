package capabilities_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

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
