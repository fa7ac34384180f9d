package fs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/shared"
	"github.com/dsh-acp/dsh-acp/session"
)

// upstreamRoot locates the shared upstream corpus (internal/shared),
// skipping the test when it is absent.
func upstreamRoot(t *testing.T) string {
	t.Helper()
	return shared.Dir(t, shared.Upstream)
}

type recordedCall struct {
	CallID    string `json:"callId"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type recordedResult struct {
	CallID  string             `json:"callId"`
	Content []session.Block    `json:"content"`
	IsError bool               `json:"isError"`
	Error   *session.ErrorInfo `json:"error"`
	Meta    json.RawMessage    `json:"meta"`
}

// recording is the fs part of one recorded session.
type recording struct {
	cwd     string
	calls   []recordedCall
	results map[string]recordedResult
	// cards: the golden tool_call and tool_call_update per call id.
	callCards   map[string]map[string]json.RawMessage
	resultCards map[string]map[string]json.RawMessage
}

func loadRecording(t *testing.T, dir string) recording {
	t.Helper()
	rec := recording{results: map[string]recordedResult{}, callCards: map[string]map[string]json.RawMessage{}, resultCards: map[string]map[string]json.RawMessage{}}
	f, err := os.Open(filepath.Join(dir, "session.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Type string          `json:"type"`
			Cwd  string          `json:"cwd"`
			Data json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		switch ev.Type {
		case "session":
			rec.cwd = ev.Cwd
		case "tool/call":
			var c recordedCall
			require.NoError(t, json.Unmarshal(ev.Data, &c))
			if c.Name == "read" || c.Name == "write" || c.Name == "edit" {
				rec.calls = append(rec.calls, c)
			}
		case "tool/result":
			var r recordedResult
			require.NoError(t, json.Unmarshal(ev.Data, &r))
			rec.results[r.CallID] = r
		}
	}
	require.NoError(t, sc.Err())

	golden, err := os.ReadFile(filepath.Join(dir, "stdout.golden.jsonl"))
	require.NoError(t, err)
	for _, line := range bytes.Split(golden, []byte("\n")) {
		var msg struct {
			Params struct {
				Update map[string]json.RawMessage `json:"update"`
			} `json:"params"`
		}
		if len(line) == 0 || json.Unmarshal(line, &msg) != nil || msg.Params.Update == nil {
			continue
		}
		var kind, id string
		_ = json.Unmarshal(msg.Params.Update["sessionUpdate"], &kind)
		_ = json.Unmarshal(msg.Params.Update["toolCallId"], &id)
		switch kind {
		case "tool_call":
			rec.callCards[id] = msg.Params.Update
		case "tool_call_update":
			rec.resultCards[id] = msg.Params.Update
		}
	}
	return rec
}

// copyTree copies a scenario workspace (read-only in the corpus) into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if os.IsNotExist(err) {
		return
	}
	require.NoError(t, err)
	for _, e := range entries {
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if e.IsDir() {
			require.NoError(t, os.MkdirAll(d, 0o755))
			copyTree(t, s, d)
			continue
		}
		b, err := os.ReadFile(s)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(d, b, 0o644))
	}
}

func TestUpstreamScenarios(t *testing.T) {
	root := upstreamRoot(t)
	for _, name := range []string{
		"acp-agent/fs-read",
		"acp-agent/fs-write",
		"acp-agent/fs-edit",
		"acp-agent/fs-policy-reject",
		"plan-acp-agent/plan-mode",
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			rec := loadRecording(t, dir)
			require.NotEmpty(t, rec.calls)
			// The mirroring compositions run without Confine.
			h := newHarness(t, false)
			copyTree(t, filepath.Join(dir, "workspace"), h.dir)
			for _, c := range rec.calls {
				want, ok := rec.results[c.CallID]
				require.True(t, ok, c.CallID)
				got := h.reg.Execute(t.Context(), h.env, c.CallID, c.Name, c.Arguments)

				require.Len(t, got.Content, len(want.Content))
				for i := range want.Content {
					require.Equal(t, strings.ReplaceAll(want.Content[i].Text, rec.cwd, "{{cwd}}"),
						strings.ReplaceAll(got.Content[i].Text, h.dir, "{{cwd}}"), c.CallID)
				}
				require.Equal(t, want.IsError, got.IsError, c.CallID)
				require.Equal(t, want.Error, got.Error, c.CallID)
				require.Equal(t, string(want.Meta), string(got.Meta), c.CallID)

				checkCards(t, h, rec, c, want)
			}
		})
	}
}

// checkCards compares the tool's views with the golden ACP updates of the
// call (the presenter that renders views is tested elsewhere; here only the
// view fields the golden reveals are checked).
func checkCards(t *testing.T, h *harness, rec recording, c recordedCall, res recordedResult) {
	t.Helper()
	tool, _ := h.reg.Lookup(c.Name)
	args := capabilities.ParseArgs(c.Arguments)
	callCard, ok := rec.callCards[c.CallID]
	require.True(t, ok, "golden tool_call for %s", c.CallID)
	view := tool.(capabilities.CallPresenter).PresentCall(args)

	var title, kind string
	require.NoError(t, json.Unmarshal(callCard["title"], &title))
	require.NoError(t, json.Unmarshal(callCard["kind"], &kind))
	require.Equal(t, title, view.Title)
	if view.Kind == capabilities.ViewGeneric {
		require.EqualValues(t, kind, view.ToolKind)
	} else {
		require.Equal(t, "edit", kind)
	}
	var locs []struct {
		Path string `json:"path"`
		Line *int   `json:"line"`
	}
	require.NoError(t, json.Unmarshal(callCard["locations"], &locs))
	require.Len(t, view.Locations, len(locs))
	for i, l := range locs {
		require.Equal(t, l.Path, view.Locations[i].Path)
		require.Equal(t, l.Line, view.Locations[i].Line)
	}
	require.Equal(t, goldenDiffs(t, callCard["content"]), view.Diffs)

	resultCard, ok := rec.resultCards[c.CallID]
	require.True(t, ok, "golden tool_call_update for %s", c.CallID)
	rp, ok := tool.(capabilities.ResultPresenter)
	if !ok {
		require.Contains(t, string(resultCard["content"]), `"type":"content"`)
		return
	}
	rv := rp.PresentResult(args, session.ToolResult{CallID: c.CallID, Content: res.Content, IsError: res.IsError, Error: res.Error, Meta: res.Meta})
	diffs := goldenDiffs(t, resultCard["content"])
	if diffs == nil {
		require.Equal(t, capabilities.ViewGeneric, rv.Kind)
		require.Nil(t, rv.Content, "raw result content")
		return
	}
	require.Equal(t, capabilities.ViewDiff, rv.Kind)
	require.Equal(t, diffs, rv.Diffs)
	require.NoError(t, json.Unmarshal(resultCard["title"], &title))
	require.Equal(t, title, rv.Title)
}

// goldenDiffs extracts the diff items of an ACP content array (nil when it
// has none).
func goldenDiffs(t *testing.T, content json.RawMessage) []capabilities.Diff {
	t.Helper()
	if content == nil {
		return nil
	}
	var items []struct {
		Type    string  `json:"type"`
		Path    string  `json:"path"`
		OldText *string `json:"oldText"`
		NewText string  `json:"newText"`
	}
	require.NoError(t, json.Unmarshal(content, &items))
	var out []capabilities.Diff
	for _, it := range items {
		if it.Type == "diff" {
			out = append(out, capabilities.Diff{Path: it.Path, OldText: it.OldText, NewText: it.NewText})
		}
	}
	return out
}
