package agent

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/session"
)

// noticingProvider notices a retry, then fails or answers.
func noticingProvider(fail bool) *llmtest.Model {
	return llmtest.New(func(context.Context, llmtest.Call) llmtest.Step {
		notice := func(ctx context.Context) {
			llm.Notice(ctx, "DeepSeek API rate limited (HTTP 429), retrying in 1s (attempt 2 of 5)")
		}
		if fail {
			return llmtest.Step{Before: notice, Err: &llm.Error{Message: "DeepSeek API rate limited (HTTP 429)", Code: "RATE_LIMIT", Hint: "Gave up after 5 attempts; wait a minute."}}
		}
		return llmtest.Step{Before: notice, Chunks: []llm.Chunk{text(0, "ok"), finish(llm.FinishStop)}}
	})
}

func TestProviderNoticesAreLoggedAndHintsReachTheEnd(t *testing.T) {
	for _, fail := range []bool{false, true} {
		var now int64
		rt := NewRuntime(Config{Model: "m", Provider: noticingProvider(fail), Clock: func() int64 { now++; return now },
			NewID: func() string { return "s" }, Log: zerolog.Nop()})
		s, _ := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
		end := s.Prompt(context.Background(), "hi")
		var notices []ModelNotice
		for _, e := range s.Log().Events() {
			if e.Type == TypeModelNotice {
				var n ModelNotice
				require.NoError(t, e.Decode(&n))
				notices = append(notices, n)
			}
		}
		require.Equal(t, []ModelNotice{{Turn: 1, Step: 1, Text: "DeepSeek API rate limited (HTTP 429), retrying in 1s (attempt 2 of 5)"}}, notices)
		if fail {
			require.Equal(t, session.EndError, end.Kind)
			require.Equal(t, "RATE_LIMIT", end.Code)
			require.Equal(t, "Gave up after 5 attempts; wait a minute.", end.Hint)
		} else {
			require.Equal(t, session.EndCompleted, end.Kind)
		}
		msgs := deriveMessages(s.Log().Events())
		for _, m := range msgs {
			for _, b := range m.Content {
				require.NotContains(t, b.Text, "retrying", "the model never sees a notice")
			}
		}
	}
}
