package acp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/acpschema"
	"github.com/dsh-acp/dsh-acp/session"
)

// compactionLog is a turn with one compaction (ok or failed) as the agent
// logs it: compact/start, its notices, the summarising step, the summary,
// compact/end.
func compactionLog(t *testing.T, failed bool) []session.Event {
	t.Helper()
	l := session.NewLog(session.Header{ID: "s", Cwd: "/w"}, FakeClock(), nil)
	l.Append(session.TypeTurnStart, session.TurnStart{Turn: 2, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	l.Append(agent.TypeCompactStart, map[string]int{"turn": 2})
	l.Append(agent.TypeModelNotice, agent.ModelNotice{Turn: 2, Step: 1, Text: "Compacting the conversation"})
	if failed {
		l.Append(agent.TypeCompactEnd, map[string]any{"turn": 2, "error": "HTTP 500"})
	} else {
		l.Append(agent.TypeCompactSummary, agent.CompactSummary{Summary: "The user asked for X; a.go was edited.", ShadowedSeqs: []int{0}, Model: "m"})
		l.Append(agent.TypeCompactEnd, map[string]int{"turn": 2})
	}
	l.Append(agent.TypeModelNotice, agent.ModelNotice{Turn: 2, Step: 1, Text: "after the compaction"})
	return l.Events()
}

func TestCompactionUpdatesForClientsThatTakeThem(t *testing.T) {
	v, err := acpschema.Unstable()
	require.NoError(t, err)
	for _, failed := range []bool{false, true} {
		present := func(on bool) []string {
			p := newPresenter(capabilities.NewRegistry(), "/w", false, false)
			p.compaction = on
			var out []string
			for _, ev := range compactionLog(t, failed) {
				for _, u := range p.present(ev) {
					b, err := json.Marshal(SessionNotification{SessionID: "s", Update: u})
					require.NoError(t, err)
					out = append(out, string(b))
				}
			}
			return out
		}
		got := present(true)
		want := []string{
			`{"sessionId":"s","update":{"sessionUpdate":"compaction_update","compactionId":"compaction-1","status":"in_progress"}}`,
		}
		if failed {
			want = append(want, `{"sessionId":"s","update":{"sessionUpdate":"compaction_update","compactionId":"compaction-1","status":"failed","error":"HTTP 500"}}`)
		} else {
			want = append(want,
				`{"sessionId":"s","update":{"sessionUpdate":"compaction_update","compactionId":"compaction-1","status":"in_progress","summary":[{"type":"text","text":"The user asked for X; a.go was edited."}]}}`,
				`{"sessionId":"s","update":{"sessionUpdate":"compaction_update","compactionId":"compaction-1","status":"completed"}}`)
		}
		want = append(want, `{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"after the compaction\n"}}}`)
		require.Equal(t, want, got)
		for _, n := range got {
			line := `{"jsonrpc":"2.0","method":"session/update","params":` + n + `}`
			require.NoError(t, v.CheckFrame([]byte(line), "session/update"), line)
		}
		// A client without the capability gets the notices as thoughts, and
		// never a compaction_update.
		for _, n := range present(false) {
			require.NotContains(t, n, "compaction_update")
		}
		require.Len(t, present(false), 2)
	}
}
