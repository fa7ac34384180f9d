package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/fs"
	"github.com/dsh-acp/dsh-acp/session"
)

// slowRead waits until all of a batch are running (or a timeout), so a
// sequential run would take the timeout once per call.
type slowRead struct {
	running  *atomic.Int32
	peak     *atomic.Int32
	duration time.Duration
}

func (slowRead) Name() string        { return "read" }
func (slowRead) Description() string { return "read" }
func (slowRead) Schema() *capabilities.Schema {
	return capabilities.Object(capabilities.Req("file_path", capabilities.String("")))
}
func (slowRead) Traits() capabilities.Traits { return capabilities.Traits{ReadOnly: true} }
func (r slowRead) Run(ctx context.Context, c *capabilities.Call) (capabilities.Result, error) {
	n := r.running.Add(1)
	for {
		p := r.peak.Load()
		if n <= p || r.peak.CompareAndSwap(p, n) {
			break
		}
	}
	time.Sleep(r.duration)
	r.running.Add(-1)
	var a struct {
		FilePath string `json:"file_path"`
	}
	_ = json.Unmarshal(c.Args, &a)
	return capabilities.TextResult("content of " + a.FilePath), nil
}

func hygieneSession(t *testing.T, p llm.Provider, tools ...capabilities.Tool) *Session {
	t.Helper()
	var now int64
	rt := NewRuntime(Config{
		Model: "m", Provider: p, Clock: func() int64 { now++; return now }, NewID: func() string { return "s-1" },
		Tools:         func(capabilities.Env) *capabilities.Registry { return capabilities.NewRegistry(tools...) },
		Log:           zerolog.Nop(),
		ParallelReads: true, RetryEmpty: true, NoticeDroppedCalls: true,
	})
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: "/work/project"})
	require.NoError(t, err)
	return s
}

func TestReadOnlyCallsRunConcurrentlyAndAreRecordedInCallOrder(t *testing.T) {
	var running, peak atomic.Int32
	read := slowRead{running: &running, peak: &peak, duration: 200 * time.Millisecond}
	var calls []llm.Chunk
	for i, f := range []string{"a", "b", "c", "d"} {
		calls = append(calls, toolCall(i, "c"+f, "read", `{"file_path":"`+f+`"}`)...)
	}
	calls = append(calls, toolCall(4, "ce", "nope", `{}`)...)
	p := newScripted([][]llm.Chunk{append(calls, finish(llm.FinishToolCalls)), {text(0, "done"), finish(llm.FinishStop)}})
	s := hygieneSession(t, p, read)
	start := time.Now()
	require.Equal(t, session.EndReason{Kind: session.EndCompleted}, s.Prompt(context.Background(), "read them"))
	require.Less(t, time.Since(start), 700*time.Millisecond, "four 200ms reads did not run one after another")
	require.Equal(t, int32(4), peak.Load())

	ev := s.Log().Events()
	require.Equal(t, "turn/start user/message step/start request/header assistant/message "+
		"tool/call tool/call tool/call tool/call tool/result tool/result tool/result tool/result "+
		"tool/call tool/result step/end step/start assistant/message step/end turn/end", types(ev))
	var order []string
	callSeq := map[string]int{}
	for _, e := range ev {
		switch e.Type {
		case session.TypeToolCall:
			var c session.ToolCall
			require.NoError(t, json.Unmarshal(e.Data, &c))
			callSeq[c.CallID] = e.Seq
		case session.TypeToolResult:
			var r session.ToolResult
			require.NoError(t, json.Unmarshal(e.Data, &r))
			order = append(order, r.CallID+"="+r.Content[0].Text)
			require.Equal(t, []int{callSeq[r.CallID]}, e.SourceEventSeqs, "each result points at its call")
		}
	}
	require.Equal(t, []string{"ca=content of a", "cb=content of b", "cc=content of c", "cd=content of d", `ce=Error: unknown tool "nope"`}, order)
	// The next request is a valid sequence: every call answered in order.
	msgs := p.Requests()[1].Messages
	require.NotEmpty(t, msgs)
}

func TestMaxTokensCutThatDroppedACallEndsTheTurnAndSaysSo(t *testing.T) {
	p := newScripted([][]llm.Chunk{
		append(append([]llm.Chunk{text(0, "Writing the file")}, toolCall(1, "c1", "read", `{"file_path":"x"`)...), finish(llm.FinishMaxTokens)),
	})
	s := hygieneSession(t, p, slowRead{running: new(atomic.Int32), peak: new(atomic.Int32)})
	require.Equal(t, session.EndReason{Kind: session.EndMaxTokens}, s.Prompt(context.Background(), "go"))
	var notices []string
	for _, e := range s.Log().Events() {
		require.NotEqual(t, session.TypeToolCall, e.Type, "the cut call did not run")
		if e.Type == TypeModelNotice {
			var n ModelNotice
			require.NoError(t, json.Unmarshal(e.Data, &n))
			notices = append(notices, n.Text)
		}
	}
	require.Equal(t, []string{"The model's answer hit its output limit (max tokens) while it was writing a tool call (read); " +
		"the cut call did not run and the turn ends here. Send another prompt to go on."}, notices)
	require.Equal(t, 1, p.Calls())
}

func TestAnEmptyAnswerIsRetriedOnce(t *testing.T) {
	p := newScripted([][]llm.Chunk{
		{finish(llm.FinishStop)},
		{text(0, "here it is"), finish(llm.FinishStop)},
	})
	s := hygieneSession(t, p)
	require.Equal(t, session.EndReason{Kind: session.EndCompleted}, s.Prompt(context.Background(), "hello"))
	require.Equal(t, 2, p.Calls())
	require.Equal(t, "turn/start user/message step/start request/header model/notice step/end step/start assistant/message step/end turn/end",
		types(s.Log().Events()))

	// Twice empty: asked once more only, then the turn ends.
	p = newScripted([][]llm.Chunk{{finish(llm.FinishStop)}, {finish(llm.FinishStop)}, {text(0, "never asked")}})
	s = hygieneSession(t, p)
	require.Equal(t, session.EndReason{Kind: session.EndCompleted}, s.Prompt(context.Background(), "hello"))
	require.Equal(t, 2, p.Calls())
}

func TestConcurrentRealReadsAreRaceFree(t *testing.T) {
	dir := t.TempDir()
	var calls []llm.Chunk
	for i := range 8 {
		name := fmt.Sprintf("f%d.txt", i)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("file %d\n", i)), 0o644))
		calls = append(calls, toolCall(i, fmt.Sprintf("c%d", i), "read", `{"file_path":"`+name+`"}`)...)
	}
	p := newScripted([][]llm.Chunk{append(calls, finish(llm.FinishToolCalls)), {text(0, "ok"), finish(llm.FinishStop)}})
	rt := NewRuntime(Config{Model: "m", Provider: p, Clock: func() int64 { return 0 }, NewID: func() string { return "s" },
		Tools: func(capabilities.Env) *capabilities.Registry {
			return capabilities.NewRegistry(fs.New(fs.Options{Confine: true})...)
		},
		Log: zerolog.Nop(), ParallelReads: true})
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: dir})
	require.NoError(t, err)
	require.Equal(t, session.EndReason{Kind: session.EndCompleted}, s.Prompt(context.Background(), "read"))
	i := 0
	for _, e := range s.Log().Events() {
		if e.Type == session.TypeToolResult {
			var r session.ToolResult
			require.NoError(t, json.Unmarshal(e.Data, &r))
			require.Contains(t, r.Content[0].Text, fmt.Sprintf("1: file %d\n", i))
			i++
		}
	}
	require.Equal(t, 8, i)
}
