package reliability

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The checkers the suite judges the agent with must catch what they claim
// to catch; these cases feed them known-bad input.

func TestValidateChatSequence(t *testing.T) {
	msgs := func(js string) []wireMessage {
		var m []wireMessage
		require.NoError(t, json.Unmarshal([]byte(js), &m))
		return m
	}
	good := msgs(`[{"role":"system","content":"s"},{"role":"user","content":"u"},
		{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"name":"bash"}},{"id":"b","function":{"name":"read"}}]},
		{"role":"tool","tool_call_id":"a","content":"x"},{"role":"tool","tool_call_id":"b","content":"y"},
		{"role":"assistant","content":"done"},{"role":"user","content":"again"}]`)
	assert.Empty(t, validate(good))

	unanswered := msgs(`[{"role":"user","content":"u"},
		{"role":"assistant","content":"","tool_calls":[{"id":"a"},{"id":"b"}]},
		{"role":"tool","tool_call_id":"a","content":"x"},{"role":"user","content":"next"}]`)
	assert.Len(t, validate(unanswered), 1, "a user message while call b is open")

	orphan := msgs(`[{"role":"user","content":"u"},{"role":"tool","tool_call_id":"z","content":"x"}]`)
	assert.Len(t, validate(orphan), 1, "a tool result for no call")

	endsOpen := msgs(`[{"role":"user","content":"u"},{"role":"assistant","content":"","tool_calls":[{"id":"a"}]}]`)
	assert.Len(t, validate(endsOpen), 2, "ends with an open call, on an assistant message")

	mr, name := describe(msgs(`[{"role":"user","content":"[[script=tools id=x1]] go"},
		{"role":"assistant","content":"","tool_calls":[{"id":"a"}]},{"role":"tool","tool_call_id":"a","content":"x"},
		{"role":"user","content":"<context source=\"plugin\">note</context>"},
		{"role":"assistant","content":"","tool_calls":[{"id":"b"}]},{"role":"tool","tool_call_id":"b","content":"x"}]`))
	assert.Equal(t, "tools", name)
	assert.Equal(t, "x1", mr.Prompt)
	assert.Equal(t, 2, mr.Step, "a context message does not restart the script")
}

func TestCheckLog(t *testing.T) {
	ev := func(seq int, typ, data string) logEvent {
		return logEvent{Type: typ, Seq: seq, Data: json.RawMessage(data)}
	}
	announce := `{"turn":1,"step":1,"content":[{"type":"tool-call","id":"c1","name":"bash","arguments":"{}"}]}`
	good := []logEvent{
		ev(0, "turn/start", `{"turn":1}`),
		ev(1, "user/message", `{"content":[{"type":"text","text":"[[script=tools id=p1]] hi"}]}`),
		ev(2, "step/start", `{"turn":1,"step":1}`),
		ev(3, "assistant/message", announce),
		ev(4, "tool/result", `{"turn":1,"step":1,"callId":"c1","isError":true,"error":{"name":"InterruptedError","code":"interrupted"}}`),
		ev(5, "step/end", `{"turn":1,"step":1}`),
		ev(6, "turn/end", `{"turn":1,"reason":{"kind":"interrupted"}}`),
	}
	turns, bad := checkLog(good)
	assert.Empty(t, bad, "a crash closer may answer a call that never got its tool/call")
	require.Len(t, turns, 1)
	assert.Equal(t, "interrupted", turns[0].End)
	assert.Equal(t, 1, turns[0].Interrupted)
	turn, _, ok := turnOf(turns, "p1")
	assert.True(t, ok)
	assert.Equal(t, 1, turn.Results)

	plain := append([]logEvent(nil), good...)
	plain[4] = ev(4, "tool/result", `{"turn":1,"step":1,"callId":"c1","isError":false}`)
	_, bad = checkLog(plain)
	assert.Len(t, bad, 1, "an ordinary result needs its tool/call")

	_, bad = checkLog(good[:5])
	assert.Len(t, bad, 1, "a log ending in an open turn")

	gap := append([]logEvent(nil), good...)
	gap[2].Seq = 7
	_, bad = checkLog(gap)
	assert.Len(t, bad, 1, "a seq gap")

	unanswered := append(append([]logEvent(nil), good[:4]...), ev(4, "step/end", `{"turn":1,"step":1}`),
		ev(5, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`))
	_, bad = checkLog(unanswered)
	assert.Len(t, bad, 1, "an announced call never answered")
}

func TestUpdateAttribution(t *testing.T) {
	// The reader attributes updates to the prompt in flight, so one that
	// comes after the response is seen as late.
	a := &agentProc{pending: map[int64]*pendingCall{}, answered: map[int64]int{}, sessions: map[string]*sessionTrace{}}
	ch := make(chan response, 1)
	a.pending[7] = &pendingCall{method: "session/prompt", session: "s", ch: ch}
	a.trace("s").open = 7
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c1","status":"in_progress"}}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"stopReason":"cancelled"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed"}}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"stopReason":"cancelled"}}`,
	} {
		a.dispatch([]byte(line))
	}
	us := a.updates("s")
	require.Len(t, us, 2)
	assert.Equal(t, int64(7), us[0].Request)
	late := lateUpdates(us, map[int64]string{7: "P"})
	require.Len(t, late, 1)
	assert.Equal(t, "tool_call_update", late[0].kind)
	assert.Len(t, a.strayResponses(), 1, "a second response to one prompt")
	assert.Len(t, orderProblems([]update{{Kind: "tool_call_update", ToolCallID: "x"}}), 1)

	// A card updated during the next prompt is late too.
	late = lateUpdates([]update{{Kind: "tool_call", ToolCallID: "c", Request: 1},
		{Kind: "tool_call_update", ToolCallID: "c", Request: 2}}, nil)
	assert.Len(t, late, 1)
}
