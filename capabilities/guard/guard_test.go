package guard

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
)

func TestCanonicalSortsKeysAsJavaScriptDoes(t *testing.T) {
	for in, want := range map[string]string{
		`{"todos": [{"status": "in_progress", "content": "watch the kettle boil"}]}`: `{"todos":[{"content":"watch the kettle boil","status":"in_progress"}]}`,
		`{"b":1,"a":{"d":[3,{"z":1,"y":2}],"c":null}}`:                               `{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}`,
		`{"n":1.0,"m":1e21,"k":0.0000001,"j":-0,"i":123456789012,"h":1.5}`:           `{"h":1.5,"i":123456789012,"j":0,"k":1e-7,"m":1e+21,"n":1}`,
		`{"10":"a","9":"b","x":"c","01":"d"}`:                                        `{"9":"b","10":"a","01":"d","x":"c"}`,
		`{"s":"<tag> & \u2028 \"q\""}`:                                               "{\"s\":\"<tag> & \u2028 \\\"q\\\"\"}",
		`"not json at all"`:                                                          `"not json at all"`,
	} {
		require.Equal(t, want, Canonical(json.RawMessage(in)), in)
	}
	require.Equal(t, `{}`, Canonical(capabilities.ParseArgs("")))
	require.Equal(t, `"{oops"`, Canonical(capabilities.ParseArgs("{oops")))
}

func call(name, args string) pipeline.Call {
	return pipeline.Call{Name: name, Arguments: args, Args: capabilities.ParseArgs(args)}
}

func texts(t *testing.T, g *Guard, calls ...pipeline.Call) []string {
	t.Helper()
	var out []string
	for _, c := range calls {
		d, err := g.ReviewResult(context.Background(), nil, c, pipeline.Result{})
		require.NoError(t, err)
		require.False(t, d.Block, "the guard never blocks")
		if d.Context == nil {
			out = append(out, "")
			continue
		}
		require.Equal(t, Plugin, d.Context.Source.Plugin)
		out = append(out, d.Context.Content[0].Text)
	}
	return out
}

func TestThresholdsRemindGentlyThenInDetail(t *testing.T) {
	g := New(nil)
	same := call("todo_write", `{"todos": [{"content": "watch the kettle boil", "status": "in_progress"}]}`)
	reordered := call("todo_write", `{"todos":[{"status":"in_progress","content":"watch the kettle boil"}]}`)
	got := texts(t, g, same, reordered, same, same, reordered, same, same, same, same)
	detailed := func(n string) string {
		return "Repeated tool call detected:\n- tool: todo_write\n- consecutive_calls: " + n +
			"\n- arguments: {\"todos\":[{\"content\":\"watch the kettle boil\",\"status\":\"in_progress\"}]}\n" +
			"The repeated calls are not making progress. Do not call this tool with these exact arguments again. " +
			"Inspect the latest result and choose a different action, different arguments, or finish the task if enough evidence has been gathered."
	}
	require.Equal(t, []string{"", "", Gentle, "", detailed("5"), "", "", detailed("8"), ""}, got, "key order does not make a call different")
}

func TestADifferentCallOrAPromptResets(t *testing.T) {
	g := New(nil)
	a, b := call("bash", `{"command":"ls"}`), call("bash", `{"command":"ls -l"}`)
	require.Equal(t, []string{"", "", "", "", ""}, texts(t, g, a, a, b, a, a))
	require.Equal(t, []string{Gentle}, texts(t, g, a))
	_, err := g.SubmitPrompt(context.Background(), nil, pipeline.Prompt{})
	require.NoError(t, err)
	require.Equal(t, []string{"", "", Gentle}, texts(t, g, a, a, a))
	require.Equal(t, []string{"", "", ""}, texts(t, g, call("read", `{"command":"ls"}`), a, a), "the tool name is part of the key")
}

func TestLongArgumentsAreCutInTheReminder(t *testing.T) {
	g := New([]int{2, 3})
	c := call("write", `{"content":"`+strings.Repeat("x", 600)+`"}`)
	got := texts(t, g, c, c, c)
	require.Equal(t, Gentle, got[1])
	require.Contains(t, got[2], `- arguments: {"content":"`+strings.Repeat("x", 500-len(`{"content":"`))+`… (+114 more chars)`+"\n")
}
