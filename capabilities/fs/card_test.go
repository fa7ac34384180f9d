package fs

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

func intp(i int) *int { return &i }

func TestReadCard(t *testing.T) {
	tools := New(Options{})
	read := tools[0].(capabilities.CallPresenter)
	rp := tools[0].(capabilities.ResultPresenter)
	// Upstream shows the raw result; editors get the lines read as code.
	res := session.ToolResult{Content: []session.Block{session.TextBlock("<path>a.go</path>\n<type>file</type>\n<content>\n" +
		"1: package a\n2: \n3: // 10: x\n\n(Showing lines 1-3 of 9. Use offset=4 to continue.)\n</content>")}}
	require.Equal(t, capabilities.ResultView{Kind: capabilities.ViewGeneric, EditorContent: []session.Block{session.TextBlock(
		"```go\npackage a\n\n// 10: x\n```\n\nShowing lines 1-3 of 9. Use offset=4 to continue.")}},
		rp.PresentResult(json.RawMessage(`{"file_path":"a.go"}`), res))
	empty := session.ToolResult{Content: []session.Block{session.TextBlock("<path>e</path>\n<type>file</type>\n<content>\n(End of file - total 0 lines)\n</content>")}}
	require.Equal(t, []session.Block{session.TextBlock("```\n\n```")},
		rp.PresentResult(json.RawMessage(`{"file_path":"e"}`), empty).EditorContent)
	failed := session.ToolResult{IsError: true, Content: []session.Block{session.TextBlock("Error: no such file")}}
	require.Equal(t, capabilities.ResultView{Kind: capabilities.ViewGeneric}, rp.PresentResult(json.RawMessage(`{"file_path":"a.go"}`), failed))
	for _, tc := range []struct {
		args  string
		title string
		line  int
	}{
		{`{"file_path":"greeting.txt"}`, "Read greeting.txt", 1},
		{`{"file_path":"a.txt","offset":10}`, "Read a.txt (from line 10)", 10},
		{`{"file_path":"a.txt","limit":5}`, "Read a.txt (1 - 5)", 1},
		{`{"file_path":"a.txt","offset":10,"limit":5}`, "Read a.txt (10 - 14)", 10},
		{`{"file_path":"a.txt","offset":10,"limit":0}`, "Read a.txt (from line 10)", 10},
		{`{"file_path":"a.txt","limit":-3}`, "Read a.txt", 1},
		{`{"file_path":"a.txt","offset":2.5,"limit":2}`, "Read a.txt (2.5 - 3.5)", 2},
		{`{"file_path":"/abs/a.txt"}`, "Read /abs/a.txt", 1},
	} {
		v := read.PresentCall(json.RawMessage(tc.args))
		require.Equal(t, capabilities.CallView{
			Kind:      capabilities.ViewGeneric,
			Title:     tc.title,
			ToolKind:  "read",
			Locations: []capabilities.Location{{Path: v.Locations[0].Path, Line: intp(tc.line)}},
		}, v, tc.args)
		require.Nil(t, v.RawInput)
	}
}

func TestWriteCard(t *testing.T) {
	w := New(Options{})[1]
	args := json.RawMessage(`{"file_path":"notes.txt","content":"hello world"}`)
	require.Equal(t, capabilities.CallView{
		Kind:      capabilities.ViewDiff,
		Title:     "Write notes.txt",
		ToolKind:  "edit",
		Diffs:     []capabilities.Diff{{Path: "notes.txt", NewText: "hello world"}},
		Locations: []capabilities.Location{{Path: "notes.txt"}},
	}, w.(capabilities.CallPresenter).PresentCall(args))

	rp := w.(capabilities.ResultPresenter)
	whole := capabilities.ResultView{Kind: capabilities.ViewDiff, Title: "Write notes.txt", Diffs: []capabilities.Diff{{Path: "notes.txt", NewText: "hello world"}}}
	require.Equal(t, whole, rp.PresentResult(args, session.ToolResult{}))
	require.Equal(t, whole, rp.PresentResult(args, session.ToolResult{Meta: json.RawMessage(`{"diffs":[]}`)}))
	require.Equal(t, whole, rp.PresentResult(args, session.ToolResult{Meta: json.RawMessage(`{"diffs":[{"path":1}]}`)}))
	require.Equal(t, capabilities.ResultView{Kind: capabilities.ViewDiff, Title: "Write notes.txt", Diffs: []capabilities.Diff{{Path: "notes.txt", OldText: str("a"), NewText: "b"}}},
		rp.PresentResult(args, session.ToolResult{Meta: json.RawMessage(`{"diffs":[{"path":"notes.txt","oldText":"a","newText":"b"}]}`)}))
	require.Equal(t, capabilities.ResultView{Kind: capabilities.ViewGeneric}, rp.PresentResult(args, session.ToolResult{IsError: true}))
}

func TestEditCard(t *testing.T) {
	e := New(Options{})[2]
	args := json.RawMessage(`{"file_path":"config.txt","old_string":"DEBUG","new_string":"RELEASE"}`)
	require.Equal(t, capabilities.CallView{
		Kind:      capabilities.ViewDiff,
		Title:     "Edit config.txt",
		ToolKind:  "edit",
		Diffs:     []capabilities.Diff{{Path: "config.txt", OldText: str("DEBUG"), NewText: "RELEASE"}},
		Locations: []capabilities.Location{{Path: "config.txt"}},
	}, e.(capabilities.CallPresenter).PresentCall(args))
	empty := e.(capabilities.CallPresenter).PresentCall(json.RawMessage(`{"file_path":"c","old_string":"","new_string":"x"}`))
	require.Nil(t, empty.Diffs[0].OldText)

	rp := e.(capabilities.ResultPresenter)
	meta := json.RawMessage(`{"diffs":[{"path":"config.txt","oldText":"mode=DEBUG\nlevel=info","newText":"mode=RELEASE\nlevel=info"},{"path":"config.txt","oldText":null,"newText":"x"}]}`)
	require.Equal(t, capabilities.ResultView{Kind: capabilities.ViewDiff, Title: "Edit config.txt", Diffs: []capabilities.Diff{
		{Path: "config.txt", OldText: str("mode=DEBUG\nlevel=info"), NewText: "mode=RELEASE\nlevel=info"},
		{Path: "config.txt", NewText: "x"},
	}}, rp.PresentResult(args, session.ToolResult{Meta: meta}))
	raw := capabilities.ResultView{Kind: capabilities.ViewGeneric}
	for _, m := range []string{``, `{}`, `{"diffs":[]}`, `{"diffs":{}}`, `{"diffs":[null]}`, `{"diffs":[{"path":"p","newText":"x"}]}`,
		`{"diffs":[{"path":"p","oldText":1,"newText":"x"}]}`, `{"diffs":[{"path":"p","oldText":null}]}`, `[]`} {
		require.Equal(t, raw, rp.PresentResult(args, session.ToolResult{Meta: json.RawMessage(m)}), m)
	}
	require.Equal(t, raw, rp.PresentResult(args, session.ToolResult{IsError: true, Meta: meta}))
}

func TestSchemasAndSections(t *testing.T) {
	tools := New(Options{})
	want := []struct {
		name, schema, section string
		order                 int
	}{
		{"read", `{"type":"object","properties":{"file_path":{"type":"string"},"offset":{"type":"number"},"limit":{"type":"number"}},"required":["file_path"]}`, "tool:read", 100},
		{"write", `{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}},"required":["file_path","content"]}`, "tool:write", 101},
		{"edit", `{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}},"required":["file_path","old_string","new_string"]}`, "tool:edit", 102},
	}
	require.Len(t, tools, 3)
	for i, w := range want {
		tool := tools[i]
		require.Equal(t, w.name, tool.Name())
		require.NotEmpty(t, tool.Description())
		b, err := json.Marshal(tool.Schema())
		require.NoError(t, err)
		require.Equal(t, w.schema, stripDescriptions(t, b), w.name)
		for _, p := range tool.Schema().Properties {
			require.NotEmpty(t, p.Schema.Description, "%s.%s", w.name, p.Name)
		}
		s := tool.(capabilities.Sectioner).PromptSection()
		require.Equal(t, w.section, s.Name)
		require.Equal(t, w.order, s.Order)
		require.NotEmpty(t, s.Text)
	}
}

// stripDescriptions drops every "description" key, keeping key order.
func stripDescriptions(t *testing.T, b []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	var walk func() string
	walk = func() string {
		tok, err := dec.Token()
		require.NoError(t, err)
		switch v := tok.(type) {
		case json.Delim:
			if v == '[' {
				res := "["
				for first := true; dec.More(); first = false {
					if !first {
						res += ","
					}
					res += walk()
				}
				_, _ = dec.Token()
				return res + "]"
			}
			res := "{"
			first := true
			for dec.More() {
				kt, err := dec.Token()
				require.NoError(t, err)
				k := kt.(string)
				val := walk()
				if k == "description" {
					continue
				}
				if !first {
					res += ","
				}
				first = false
				kb, _ := json.Marshal(k)
				res += string(kb) + ":" + val
			}
			_, _ = dec.Token()
			return res + "}"
		default:
			vb, _ := json.Marshal(v)
			return string(vb)
		}
	}
	return walk()
}

func TestJSFloat(t *testing.T) {
	for f, want := range map[float64]string{
		1: "1", 2.5: "2.5", -3: "-3", 0: "0", 1e20: "100000000000000000000", 1e21: "1e+21",
		1e300: "1e+300", 1.5e-7: "1.5e-7", 1e-6: "0.000001", 0.1: "0.1", 123456789.125: "123456789.125",
	} {
		require.Equal(t, want, jsFloat(f), "%v", f)
	}
}
