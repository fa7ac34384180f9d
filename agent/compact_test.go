package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

func usage(in int) llm.Chunk {
	return llm.Chunk{Type: llm.ChunkUsage, Usage: &llm.Usage{InputTokens: in, OutputTokens: 10}}
}

func answer(s string, in int) []llm.Chunk {
	return []llm.Chunk{text(0, s), usage(in), finish(llm.FinishStop)}
}

func compactSession(t *testing.T, p llm.Provider) *Session {
	t.Helper()
	var now int64
	rt := NewRuntime(Config{
		Model: "m", Provider: p, Clock: func() int64 { now++; return now }, NewID: func() string { return "s-1" },
		Tools:      func(capabilities.Env) *capabilities.Registry { return capabilities.NewRegistry() },
		Log:        zerolog.Nop(),
		Compaction: &Compaction{Window: 1000, Threshold: 0.8, MaxTokens: 500},
		Commands:   []Command{CompactCommand()},
	})
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: "/work/project"})
	require.NoError(t, err)
	return s
}

func texts(m llm.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func noticesOf(events []session.Event) []string {
	var out []string
	for _, e := range events {
		if e.Type == TypeModelNotice {
			var n ModelNotice
			_ = json.Unmarshal(e.Data, &n)
			out = append(out, n.Text)
		}
	}
	return out
}

func TestCompactionPastTheThresholdSummarisesWithOneCall(t *testing.T) {
	p := newScripted([][]llm.Chunk{
		answer("first answer", 100),
		answer("second answer", 850),                            // 860 of 1000: past 0.8
		answer("The user asked twice; the agent answered.", 50), // the summary
		answer("third answer", 120),
		answer("fourth answer", 130),
	})
	s := compactSession(t, p)
	s.Prompt(context.Background(), "one")
	s.Prompt(context.Background(), "two")
	require.Equal(t, 2, p.Calls())
	s.Prompt(context.Background(), "three")
	require.Equal(t, 4, p.Calls(), "compaction costs one model call")

	sumReq := p.Requests()[2]
	require.Equal(t, compactPrompt, sumReq.System)
	require.Empty(t, sumReq.Tools)
	require.Equal(t, 500, *sumReq.Config.MaxTokens)
	require.Len(t, sumReq.Messages, 5, "one, first answer, two, second answer, the request")
	require.Equal(t, compactRequest, texts(sumReq.Messages[4]))

	next := p.Requests()[3].Messages
	require.Len(t, next, 2, "the summary, then the new prompt")
	require.Contains(t, texts(next[0]), summaryHeader+"The user asked twice; the agent answered.")
	require.Equal(t, "three", texts(next[1]))

	var sum CompactSummary
	var typesSeen []string
	for _, e := range s.Log().Events() {
		if strings.HasPrefix(e.Type, "compact/") {
			typesSeen = append(typesSeen, e.Type)
		}
		if e.Type == TypeCompactSummary {
			require.NoError(t, json.Unmarshal(e.Data, &sum))
		}
	}
	require.Equal(t, []string{TypeCompactStart, TypeCompactSummary, TypeCompactEnd}, typesSeen)
	require.Equal(t, "The user asked twice; the agent answered.", sum.Summary)
	require.Equal(t, "m", sum.Model)
	require.Equal(t, 860, sum.ShadowedTokenCount)
	// What it replaced is a range, not a list that grows with the session.
	require.Nil(t, sum.ShadowedSeqs)
	inRange := 0
	for _, e := range s.Log().Events() {
		if isSurface(e.Type) && e.Seq >= sum.ShadowedRange.Start && e.Seq <= sum.ShadowedRange.End {
			inRange++
		}
	}
	require.Equal(t, 4, inRange, "the two earlier turns' messages")
	require.Equal(t, 500, *sum.MaxTokens)

	// The next turn does not compact again (usage is low) and derives from the summary.
	s.Prompt(context.Background(), "four")
	require.Equal(t, 5, p.Calls())
	require.Len(t, p.Requests()[4].Messages, 4, "summary, three, third answer, four")

	// Loading the log derives the same history.
	msgs, _ := deriveHistory(compacted(s.Log().Events()))
	require.Len(t, msgs, 5)
	require.Equal(t, p.Requests()[4].Messages, msgs[:4])
}

func TestCompactionWhoseModelCallFailsLeavesTheConversationWhole(t *testing.T) {
	p := newScripted([][]llm.Chunk{
		answer("big answer", 900),
		{llm.Chunk{Type: llm.ChunkFinish, Reason: &llm.FinishReason{Kind: llm.FinishError, Message: "overloaded", Code: "SERVER_ERROR"}}},
		answer("still here", 950),
	})
	s := compactSession(t, p)
	s.Prompt(context.Background(), "one")
	r := s.Prompt(context.Background(), "two")
	require.Equal(t, session.EndReason{Kind: session.EndCompleted}, r, "the turn goes on")
	require.Equal(t, 3, p.Calls(), "one failed try, no retry loop")
	require.Len(t, p.Requests()[2].Messages, 3, "uncompacted: one, big answer, two")
	notices := noticesOf(s.Log().Events())
	require.Contains(t, notices, "Compaction failed (overloaded); the conversation goes on uncompacted.")
	for _, e := range s.Log().Events() {
		require.NotEqual(t, TypeCompactSummary, e.Type)
		if e.Type == TypeCompactEnd {
			require.JSONEq(t, `{"turn":2,"error":"overloaded"}`, string(e.Data))
		}
	}
}

func TestCompactCommand(t *testing.T) {
	p := newScripted([][]llm.Chunk{answer("hello", 10), answer("A greeting was exchanged.", 5), answer("ok", 10)})
	s := compactSession(t, p)
	s.Prompt(context.Background(), "/compact")
	require.Equal(t, 0, p.Calls(), "nothing to compact: no model call")
	var results []string
	for _, e := range s.Log().Events() {
		if e.Type == TypeCommandResult {
			var r CommandResult
			require.NoError(t, json.Unmarshal(e.Data, &r))
			results = append(results, r.Text)
		}
	}
	require.Equal(t, []string{"Nothing to compact yet: the conversation has no earlier messages."}, results)

	s.Prompt(context.Background(), "hi")
	s.Prompt(context.Background(), "/compact")
	require.Equal(t, 2, p.Calls())
	s.Prompt(context.Background(), "and now?")
	msgs := p.Requests()[2].Messages
	require.Contains(t, texts(msgs[0]), "A greeting was exchanged.")
	require.Equal(t, "/compact", texts(msgs[1]))
	require.Contains(t, texts(msgs[2]), "Compacted the conversation: 4 earlier messages", "the command's report, as context")
	require.Equal(t, "and now?", texts(msgs[len(msgs)-1]))
}
