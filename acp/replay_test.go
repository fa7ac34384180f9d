package acp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// A log a crash cut between the assistant/message announcing two calls and
// the tool/call of the second: crash repair closes both unanswered calls,
// and the load replay must not update a card it never showed: it shows the
// unlogged call as a card of its own, then its interrupted result.
func TestReplayCardsUnloggedCalls(t *testing.T) {
	l := session.NewLog(session.Header{ID: "s", Cwd: "/w"}, FakeClock(), nil)
	l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	l.Append(session.TypeUserMessage, session.Message{Content: []session.Block{session.TextBlock("go")}, Source: session.UserSource})
	l.Append(session.TypeStepStart, session.StepRef{Turn: 1, Step: 1})
	l.Append(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Content: []session.Block{
		{Type: session.BlockToolCall, ID: "c1", Name: "probe", Arguments: `{"n":1}`},
		{Type: session.BlockToolCall, ID: "c2", Name: "probe", Arguments: `{"n":2}`},
	}})
	l.Append(session.TypeToolCall, session.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "probe", Arguments: `{"n":1}`})
	events := append(l.Events(), session.RepairClosers(l.Events())...)

	kinds := func(card bool) []string {
		p := newPresenter(capabilities.NewRegistry(), "/w", false, true)
		p.cardOrphans = card
		var out []string
		for _, ev := range events {
			for _, u := range p.present(ev) {
				b, err := json.Marshal(u)
				require.NoError(t, err)
				var k struct {
					SessionUpdate string `json:"sessionUpdate"`
					ToolCallID    string `json:"toolCallId"`
					Status        string `json:"status"`
				}
				require.NoError(t, json.Unmarshal(b, &k))
				if k.ToolCallID != "" {
					out = append(out, k.SessionUpdate+" "+k.ToolCallID+" "+k.Status)
				}
			}
		}
		return out
	}
	assert.Equal(t, []string{"tool_call c1 in_progress", "tool_call_update c1 failed", "tool_call_update c2 failed"}, kinds(false),
		"upstream: the closer of the unlogged call is an orphan update")
	assert.Equal(t, []string{"tool_call c1 in_progress", "tool_call_update c1 failed", "tool_call c2 in_progress", "tool_call_update c2 failed"}, kinds(true))
}
