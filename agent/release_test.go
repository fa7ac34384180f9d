package agent

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
)

// releaseSession is a long session (see longSession) that checks, at
// every step, its incremental state against the whole log read back.
func releaseSession(t *testing.T, m *turnModel) (*Session, *jsonl.Store) {
	return longSession(t, m, true)
}

// compactedSession is a releaseSession after 70 turns: one compaction,
// and a release, behind it.
func compactedSession(t *testing.T, m *turnModel) *Session {
	s, _ := releaseSession(t, m)
	for i := range 70 {
		r := s.Prompt(context.Background(), "read a.txt")
		require.Equal(t, session.EndCompleted, r.Kind, "turn %d: %+v", i+1, r)
	}
	return s
}

// TestCompactedTurnsLeaveMemory: after a compaction the log lets go of the
// results, answers and step markers the summary replaced, so memory holds
// what the next requests need; the log itself (All, the store) still has
// every event, and every step's request equals the one derived from the
// whole log (CheckDerivation would end the turn with an error).
func TestCompactedTurnsLeaveMemory(t *testing.T) {
	m := newTurnModel(3)
	s, store := releaseSession(t, m)
	ctx := context.Background()
	for i := range 150 {
		r := s.Prompt(ctx, "read a.txt")
		require.Equal(t, session.EndCompleted, r.Kind, "turn %d: %+v", i+1, r)
	}
	all, err := s.Log().All(ctx)
	require.NoError(t, err)
	_, stored, err := store.Load(ctx, s.ID())
	require.NoError(t, err)
	require.Equal(t, len(stored), len(all))
	for i := range all {
		a, _ := all[i].MarshalJSON()
		b, _ := stored[i].MarshalJSON()
		require.Equal(t, string(b), string(a), "event #%d reads back as stored", i)
	}

	summaries, lastSummary := 0, -1
	var sum CompactSummary
	for _, e := range all {
		if e.Type == TypeCompactSummary {
			summaries++
			lastSummary = e.Seq
			require.NoError(t, e.Decode(&sum))
		}
	}
	require.GreaterOrEqual(t, summaries, 2, "the session compacted more than once")
	kept := map[int]bool{}
	for _, e := range s.Log().Events() {
		kept[e.Seq] = true
	}
	results, keptResults := 0, 0
	for _, e := range all {
		if e.Type != session.TypeToolResult {
			continue
		}
		results++
		replaced := e.Seq >= sum.ShadowedRange.Start && e.Seq <= sum.ShadowedRange.End && e.Seq < lastSummary
		if kept[e.Seq] {
			keptResults++
			require.False(t, replaced, "result #%d, which the latest summary replaced, is still in memory", e.Seq)
		}
		if !replaced {
			require.True(t, kept[e.Seq], "result #%d, which the next request shows, left memory", e.Seq)
		}
	}
	require.Less(t, keptResults, results/2, "most results left memory")
	for _, e := range all {
		switch e.Type {
		case session.TypeTurnStart, session.TypeTurnEnd, session.TypeUserMessage, session.TypeToolCall:
			require.True(t, kept[e.Seq], "a %s (#%d) is what old-turn readers look for: it stays", e.Type, e.Seq)
		}
	}

	// A later request still carries the summary and the turns after it.
	r := s.Prompt(ctx, "read a.txt")
	require.Equal(t, session.EndCompleted, r.Kind)
	req := m.Requests()[len(m.Requests())-1]
	msgs, err := json.Marshal(req.Messages)
	require.NoError(t, err)
	require.Contains(t, string(msgs), "nothing changed", "the summary is in the request")
}

// TestASummaryThatKeepsReleasedEventsReadsThemBack: a later summary that
// leaves in place some of what memory let go of (an older build's list
// of seqs) has the history derived from the whole log, read back.
func TestASummaryThatKeepsReleasedEventsReadsThemBack(t *testing.T) {
	s := compactedSession(t, newTurnModel(1))
	ctx := context.Background()
	all, err := s.Log().All(ctx)
	require.NoError(t, err)
	require.Less(t, s.Log().Len(), len(all)-70*3, "memory let go of more than the chunks")
	// A list summary that replaces only the first user message.
	first := -1
	for _, e := range all {
		if e.Type == session.TypeUserMessage {
			first = e.Seq
			break
		}
	}
	s.Log().Append(TypeCompactSummary, CompactSummary{Summary: "only the first question", ShadowedSeqs: []int{first}, Model: "m"})
	r := s.derive()
	msgs, _, err := r.messages()
	r.mu.Unlock()
	require.NoError(t, err)
	all, err = s.Log().All(ctx)
	require.NoError(t, err)
	want, _ := deriveHistory(compacted(all))
	require.True(t, sameMessages(msgs, want), "the history is the whole log's")
	require.Greater(t, len(want), 100, "the released results and answers are back in it")
}

// TestAFailedReadBackRefusesTheRequest: when the whole log cannot be read
// back for such a summary, the history would lack what memory let go of;
// the request is refused with the reason instead of sent without it.
func TestAFailedReadBackRefusesTheRequest(t *testing.T) {
	m := newTurnModel(1)
	s := compactedSession(t, m)
	r := s.derive()
	r.readBack = func(int) ([]session.Event, error) { return nil, errors.New("the disk is gone") }
	r.mu.Unlock()
	s.Log().Append(TypeCompactSummary, CompactSummary{Summary: "only the first question", ShadowedSeqs: []int{0}, Model: "m"})
	sent := len(m.Requests())
	end := s.Prompt(context.Background(), "read a.txt")
	require.Equal(t, session.EndError, end.Kind)
	require.Equal(t, CodeInvalidHistory, end.Code)
	require.Contains(t, end.Message, "the disk is gone")
	require.Equal(t, sent, len(m.Requests()), "nothing was sent to the model")
}
