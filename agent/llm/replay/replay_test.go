package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/internal/shared"
)

// upstream returns the scenario corpus directory, skipping the test when it
// is absent.
func upstream(t *testing.T) string {
	t.Helper()
	return shared.Dir(t, shared.Upstream)
}

// scenario returns the path of file in an acp-agent scenario: the copy
// under testdata/ (TestTestdataIsUpstream keeps it equal to the corpus).
func scenario(t *testing.T, name, file string) string {
	t.Helper()
	return filepath.Join("testdata", "acp-agent", name, file)
}

// TestTestdataIsUpstream checks that the scenario files the unit tests read
// from testdata/ are byte-for-byte the upstream corpus's.
func TestTestdataIsUpstream(t *testing.T) {
	t.Parallel()
	root := upstream(t)
	copies, err := filepath.Glob(filepath.Join("testdata", "acp-agent", "*", "*"))
	require.NoError(t, err)
	require.Len(t, copies, 10)
	for _, c := range copies {
		rel, err := filepath.Rel("testdata", c)
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join(root, rel))
		require.NoError(t, err)
		got, err := os.ReadFile(c)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "testdata/%s differs from ../shared/upstream/%s: copy it again", rel, rel)
	}
}

// rawChunks returns the data.chunk bytes of every assistant/chunk event of
// the log at path whose index is at least skip, exactly as written.
func rawChunks(t *testing.T, path string, skip int) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out [][]byte
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	for i, line := range lines[1:] {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Chunk json.RawMessage `json:"chunk"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(line, &ev))
		if ev.Type == "assistant/chunk" && i >= skip {
			out = append(out, ev.Data.Chunk)
		}
	}
	return out
}

// collect drains one stream.
func collect(seq func(func(llm.Chunk, error) bool)) ([]llm.Chunk, error) {
	var chunks []llm.Chunk
	for c, err := range seq {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, c)
	}
	return chunks, nil
}

// call streams one model call of session id.
func call(p *Provider, id string) ([]llm.Chunk, error) {
	return collect(p.Stream(context.Background(), &llm.Request{SessionID: id}))
}

// entry builds a KindChunks entry: one text-delta, then a stop finish.
func entry(t *testing.T, text string) Entry {
	t.Helper()
	var c llm.Chunk
	require.NoError(t, c.UnmarshalJSON([]byte(fmt.Sprintf(`{"type":"text-delta","index":0,"text":%q}`, text))))
	var f llm.Chunk
	require.NoError(t, f.UnmarshalJSON([]byte(`{"type":"finish","reason":{"kind":"stop"}}`)))
	return Entry{Kind: KindChunks, Chunks: []llm.Chunk{c, f}}
}

func TestDeriveTextTurnKeepsRawBytes(t *testing.T) {
	path := scenario(t, "text-turn", "session.jsonl")
	script, err := DeriveFile(path)
	require.NoError(t, err)
	require.Len(t, script, 1)
	require.Equal(t, KindChunks, script[0].Kind)
	require.Len(t, script[0].Chunks, 28)

	want := rawChunks(t, path, 0)
	require.Len(t, want, 28)
	for i, c := range script[0].Chunks {
		require.Equal(t, string(want[i]), string(c.Raw), "chunk %d", i)
		b, err := json.Marshal(c)
		require.NoError(t, err)
		require.Equal(t, string(want[i]), string(b), "re-encoded chunk %d", i)
	}
	last := script[0].Chunks[27]
	require.Equal(t, llm.ChunkFinish, last.Type)
	require.Equal(t, llm.FinishStop, last.Reason.Kind)

	// Served unchanged through the provider.
	p, err := New(path, "", nil)
	require.NoError(t, err)
	got, err := call(p, "s1")
	require.NoError(t, err)
	require.Len(t, got, 28)
	for i, c := range got {
		require.Equal(t, string(want[i]), string(c.Raw), "served chunk %d", i)
	}
}

func TestDeriveGroupsBySteps(t *testing.T) {
	script, err := DeriveFile(scenario(t, "tool-call-turn", "session.jsonl"))
	require.NoError(t, err)
	require.Len(t, script, 2)
	require.Len(t, script[0].Chunks, 54)
	require.Len(t, script[1].Chunks, 33)
	require.Equal(t, llm.FinishToolCalls, script[0].Chunks[53].Reason.Kind)
	require.Equal(t, llm.FinishStop, script[1].Chunks[32].Reason.Kind)

	p := NewFromScripts(script)
	for i := range 2 {
		got, err := call(p, "s")
		require.NoError(t, err)
		require.Len(t, got, len(script[i].Chunks))
	}
}

func TestDeriveUnfinishedGroupIsAnError(t *testing.T) {
	_, err := DeriveFile(scenario(t, "cancel", "session.jsonl"))
	require.EqualError(t, err, "llm-replay: model call 1/1 ended without a finish chunk (a thrown stream); "+
		"this scenario needs a replay.override.json sidecar")

	// Without the override New fails the same way; with it the primary is
	// not derived.
	_, err = New(scenario(t, "cancel", "session.jsonl"), "", nil)
	require.ErrorContains(t, err, "model call 1/1 ended without a finish chunk")
	_, err = New(scenario(t, "cancel", "session.jsonl"), scenario(t, "cancel", "replay.override.json"), nil)
	require.NoError(t, err)
}

func TestDeriveLogSynthetic(t *testing.T) {
	log := `{"type":"session","version":0,"id":"x","createdAt":0}
{"type":"assistant/chunk","seq":0,"time":0,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}
{"type":"assistant/chunk","seq":1,"time":0,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"a"}}}
{"type":"assistant/chunk","seq":2,"time":0,"data":{"turn":2,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}
`
	_, err := DeriveLog([]byte(log))
	require.EqualError(t, err, "llm-replay: model call 1/2 ended without a finish chunk (a thrown stream); "+
		"this scenario needs a replay.override.json sidecar")

	script, err := DeriveLog([]byte(`{"type":"session","version":0,"id":"x","createdAt":0}` + "\n"))
	require.NoError(t, err)
	require.Empty(t, script)

	_, err = DeriveLog([]byte(`{"type":"session","version":1,"id":"x","createdAt":0}` + "\n"))
	require.ErrorContains(t, err, "unsupported session format version 1")
}

func TestOverrideHangUnblocksOnCancel(t *testing.T) {
	p, err := New(scenario(t, "cancel", "session.jsonl"), scenario(t, "cancel", "replay.override.json"), nil)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		chunks []llm.Chunk
		err    error
	}
	done := make(chan result, 1)
	got := make(chan struct{}, 2)
	go func() {
		var chunks []llm.Chunk
		for c, err := range p.Stream(ctx, &llm.Request{SessionID: "s"}) {
			if err != nil {
				done <- result{chunks, err}
				return
			}
			chunks = append(chunks, c)
			got <- struct{}{}
		}
		done <- result{chunks, nil}
	}()
	<-got
	<-got
	select {
	case r := <-done:
		t.Fatalf("hang returned before cancel: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	select {
	case r := <-done:
		require.Len(t, r.chunks, 2)
		require.Equal(t, `{"type":"block-start","index":0,"blockType":"text"}`, string(r.chunks[0].Raw))
		require.Equal(t, `{"type":"text-delta","index":0,"text":"partial"}`, string(r.chunks[1].Raw))
		require.ErrorIs(t, r.err, context.Canceled)
		require.Empty(t, llm.ErrorCode(r.err))
	case <-time.After(5 * time.Second):
		t.Fatal("hang did not unblock on cancel")
	}
}

func TestOverrideThrow(t *testing.T) {
	p, err := New(scenario(t, "error-finish", "session.jsonl"), scenario(t, "error-finish", "replay.override.json"), nil)
	require.NoError(t, err)
	chunks, err := call(p, "s")
	require.Empty(t, chunks)
	var le *llm.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, "simulated provider error (HTTP 401)", le.Message)
	require.Equal(t, "AUTH", le.Code)
	require.Equal(t, 401, le.Status)
	require.Equal(t, "AUTH", llm.ErrorCode(err))
}

func TestOverrideThrowAfterChunks(t *testing.T) {
	script, err := ParseOverride([]byte(`[
  {"kind":"chunks","chunks":[{"type":"finish", "reason":{"kind":"stop"}}]},
  {"kind":"throw","chunks":[{"type":"block-start","index":0,"blockType":"text"}],"message":"boom","code":"SERVER"}
]`))
	require.NoError(t, err)
	p := NewFromScripts(script)
	got, err := call(p, "s")
	require.NoError(t, err)
	require.Equal(t, `{"type":"finish","reason":{"kind":"stop"}}`, string(got[0].Raw))
	got, err = call(p, "s")
	require.Len(t, got, 1)
	require.Equal(t, "SERVER", llm.ErrorCode(err))
	require.EqualError(t, err, "boom")
}

func TestParseOverrideRejects(t *testing.T) {
	_, err := ParseOverride([]byte(`{"kind":"hang"}`))
	require.ErrorContains(t, err, "must be a JSON array")
	_, err = ParseOverride([]byte(`[{"kind":"explode"}]`))
	require.ErrorContains(t, err, `unknown kind "explode"`)
	_, err = ParseOverride([]byte(`[{"kind":"chunks","chunks":[{"type":}]}]`))
	require.Error(t, err)
}

func TestScriptExhausted(t *testing.T) {
	p := NewFromScripts(Script{entry(t, "one")})
	_, err := call(p, "s")
	require.NoError(t, err)
	_, err = call(p, "s")
	require.EqualError(t, err, "llm-replay: script exhausted — session requested model call #2 but its script has only 1; re-record the scenario")
	var le *llm.Error
	require.False(t, errors.As(err, &le), "exhaustion is a plain error")
	_, err = call(p, "s")
	require.ErrorContains(t, err, "model call #3 but its script has only 1")
}

func TestUnrecordedSession(t *testing.T) {
	p := NewFromScripts(Script{entry(t, "one")})
	_, err := call(p, "parent")
	require.NoError(t, err)
	_, err = call(p, "stranger")
	require.EqualError(t, err, "llm-replay: a model call arrived from an unrecorded session (#2); the scenario recorded only 1 session(s) — re-record it")
	var le *llm.Error
	require.False(t, errors.As(err, &le), "an unrecorded session is a plain error")
	// The stranger keeps its number; the parent is unaffected.
	_, err = call(p, "stranger")
	require.ErrorContains(t, err, "unrecorded session (#2)")
	_, err = call(p, "other")
	require.ErrorContains(t, err, "unrecorded session (#3)")
	_, err = call(p, "parent")
	require.ErrorContains(t, err, "script exhausted")
}

func TestChildBindingOrder(t *testing.T) {
	primary := scenario(t, "subagent-spawn", "session.jsonl")
	child := scenario(t, "subagent-spawn", "session.1.jsonl")
	parentScript, err := DeriveFile(primary)
	require.NoError(t, err)
	childScript, err := DeriveFile(child)
	require.NoError(t, err)
	require.Len(t, parentScript, 2)
	require.Len(t, childScript, 1)

	p, err := New(primary, "", []string{child})
	require.NoError(t, err)
	// The parent streams first (and delegates), then the child runs, then
	// the parent continues.
	got, err := call(p, "live-parent")
	require.NoError(t, err)
	require.Equal(t, parentScript[0].Chunks, got)
	got, err = call(p, "live-child")
	require.NoError(t, err)
	require.Equal(t, childScript[0].Chunks, got)
	got, err = call(p, "live-parent")
	require.NoError(t, err)
	require.Equal(t, parentScript[1].Chunks, got)
	_, err = call(p, "live-child")
	require.ErrorContains(t, err, "model call #2 but its script has only 1")
	_, err = call(p, "live-grandchild")
	require.ErrorContains(t, err, "unrecorded session (#3); the scenario recorded only 2 session(s)")
}

func TestChildrenBindInGivenOrder(t *testing.T) {
	p := NewFromScripts(Script{entry(t, "p")}, Script{entry(t, "c1")}, Script{entry(t, "c2")})
	for _, tc := range []struct{ id, text string }{{"p", "p"}, {"b", "c1"}, {"a", "c2"}} {
		got, err := call(p, tc.id)
		require.NoError(t, err)
		require.Equal(t, tc.text, got[0].Text)
	}
}

func TestForkChildSkipsSeed(t *testing.T) {
	path := scenario(t, "subagent-fork", "session.1.jsonl")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	h, events, err := ParseLog(data)
	require.NoError(t, err)
	require.Equal(t, 37, h.SeedLength)

	script, err := Derive(h, events)
	require.NoError(t, err)
	require.Len(t, script, 1)
	require.Len(t, script[0].Chunks, 44)
	want := rawChunks(t, path, h.SeedLength)
	require.Len(t, want, 44)
	for i, c := range script[0].Chunks {
		require.Equal(t, string(want[i]), string(c.Raw), "chunk %d", i)
	}

	// Without the skip the inherited parent call would come first.
	h.SeedLength = 0
	all, err := Derive(h, events)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, script[0].Chunks, all[1].Chunks)
}

func TestMissingFixture(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "session.jsonl")
	_, err := New(missing, "", nil)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.True(t, strings.HasPrefix(err.Error(), "llm-replay: fixture not found: "+missing), err.Error())

	// Missing primary even with an override.
	override := filepath.Join(dir, "replay.override.json")
	require.NoError(t, os.WriteFile(override, []byte(`[{"kind":"hang"}]`), 0o644))
	_, err = New(missing, override, nil)
	require.True(t, strings.HasPrefix(err.Error(), "llm-replay: fixture not found: "+missing), err.Error())

	primary := filepath.Join(dir, "present.jsonl")
	require.NoError(t, os.WriteFile(primary, []byte(`{"type":"session","version":0,"id":"x","createdAt":0}`+"\n"), 0o644))
	for _, tc := range []struct {
		override string
		children []string
		missing  string
	}{
		{filepath.Join(dir, "nope.json"), nil, filepath.Join(dir, "nope.json")},
		{"", []string{filepath.Join(dir, "session.1.jsonl")}, filepath.Join(dir, "session.1.jsonl")},
	} {
		_, err = New(primary, tc.override, tc.children)
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.True(t, strings.HasPrefix(err.Error(), "llm-replay: fixture not found: "+tc.missing), err.Error())
	}

	// Header-only primary: an empty script.
	p, err := New(primary, "", nil)
	require.NoError(t, err)
	_, err = call(p, "s")
	require.ErrorContains(t, err, "model call #1 but its script has only 0")
}

func TestCancelBetweenChunks(t *testing.T) {
	script, err := DeriveFile(scenario(t, "text-turn", "session.jsonl"))
	require.NoError(t, err)
	p := NewFromScripts(script)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n int
	var streamErr error
	for _, err := range p.Stream(ctx, &llm.Request{SessionID: "s"}) {
		if err != nil {
			streamErr = err
			break
		}
		n++
		if n == 3 {
			cancel()
		}
	}
	require.Equal(t, 3, n)
	require.ErrorIs(t, streamErr, context.Canceled)
}

func TestEarlyBreakAndLazyClaim(t *testing.T) {
	p := NewFromScripts(Script{entry(t, "one"), entry(t, "two")})
	// Calling Stream without iterating claims nothing.
	_ = p.Stream(context.Background(), &llm.Request{SessionID: "s"})
	for c, err := range p.Stream(context.Background(), &llm.Request{SessionID: "s"}) {
		require.NoError(t, err)
		require.Equal(t, "one", c.Text)
		break
	}
	got, err := call(p, "s")
	require.NoError(t, err)
	require.Equal(t, "two", got[0].Text)
}

func TestConcurrentSessions(t *testing.T) {
	const n = 16
	scripts := make([]Script, n)
	for i := range scripts {
		scripts[i] = Script{entry(t, fmt.Sprint(i)), entry(t, fmt.Sprint(i))}
	}
	p := NewFromScripts(scripts[0], scripts[1:]...)
	var wg sync.WaitGroup
	texts := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("session-%d", i)
			for range 2 {
				got, err := call(p, id)
				if err != nil {
					errs[i] = err
					return
				}
				if texts[i] != "" && texts[i] != got[0].Text {
					errs[i] = fmt.Errorf("session %s served from two scripts", id)
					return
				}
				texts[i] = got[0].Text
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		require.NoError(t, errs[i])
		require.False(t, seen[texts[i]], "script %s bound twice", texts[i])
		seen[texts[i]] = true
	}
	require.Len(t, seen, n)
}

// TestCorpusDerives derives every log of the corpus the way New would and
// checks the chunk bytes survive untouched.
func TestCorpusDerives(t *testing.T) {
	root := upstream(t)
	logs, err := filepath.Glob(filepath.Join(root, "*", "*", "session*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	for _, path := range logs {
		dir := filepath.Dir(path)
		if filepath.Base(path) == "session.jsonl" {
			if _, err := os.Stat(filepath.Join(dir, "replay.override.json")); err == nil {
				continue
			}
		}
		t.Run(strings.TrimPrefix(path, root), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			h, events, err := ParseLog(data)
			require.NoError(t, err)
			script, err := Derive(h, events)
			require.NoError(t, err)
			var got [][]byte
			for _, e := range script {
				for _, c := range e.Chunks {
					got = append(got, c.Raw)
				}
			}
			want := rawChunks(t, path, h.SeedLength)
			require.Len(t, got, len(want))
			for i := range want {
				require.Equal(t, string(want[i]), string(got[i]))
			}
		})
	}
}
