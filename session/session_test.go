package session

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEventRoundTripKeepsKeyOrder(t *testing.T) {
	lines := []string{
		`{"type":"turn/start","seq":0,"time":5,"data":{"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}}}`,
		`{"type":"assistant/message","seq":3,"time":5,"data":{"turn":1,"step":1,"content":[{"type":"text","text":"<&>"}]},"sourceEventSeqs":[1,2],"surfaceOp":"append"}`,
		`{"type":"tool/result","seq":4,"time":5,"data":{"turn":1,"step":1,"callId":"c","content":[],"isError":true},"surfaceOp":"append","sourceEventSeqs":[3]}`,
	}
	for _, l := range lines {
		var e Event
		require.NoError(t, json.Unmarshal([]byte(l), &e))
		b, err := e.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, l, string(b))
	}
}

func TestHeaderVersionIsChecked(t *testing.T) {
	var h Header
	require.NoError(t, json.Unmarshal([]byte(`{"type":"session","version":0,"id":"x","createdAt":1,"cwd":"/w"}`), &h))
	b, _ := h.MarshalJSON()
	require.Equal(t, `{"type":"session","version":0,"id":"x","createdAt":1,"cwd":"/w"}`, string(b))
	err := json.Unmarshal([]byte(`{"type":"session","version":1,"id":"x","createdAt":1}`), &h)
	require.EqualError(t, err, `unsupported session format version 1 for "x" (only v0 is supported)`)
}

func TestLogNotifiesInOrderAndUnsubscribes(t *testing.T) {
	l := NewLog(Header{ID: "s"}, func() int64 { return 7 }, nil)
	var seen []int
	unsub := l.Subscribe(func(e Event) { seen = append(seen, e.Seq) })
	l.Append(TypeTurnStart, TurnStart{Turn: 1})
	ev := l.Append(TypeUserMessage, Message{Content: []Block{TextBlock("hi")}, Source: UserSource})
	require.Equal(t, `"append"`, string(ev.SurfaceOp), "surface events carry surfaceOp")
	require.Equal(t, int64(7), ev.Time)
	unsub()
	l.Append(TypeTurnEnd, TurnEnd{Turn: 1, Reason: EndReason{Kind: EndCompleted}})
	require.Equal(t, []int{0, 1}, seen)
	require.Equal(t, 3, l.Len())
}

func build(t *testing.T, lines ...string) []Event {
	t.Helper()
	var out []Event
	for _, l := range lines {
		var e Event
		require.NoError(t, json.Unmarshal([]byte(l), &e))
		out = append(out, e)
	}
	return out
}

func TestRepairClosersCloseAnOpenToolStep(t *testing.T) {
	events := build(t,
		`{"type":"turn/start","seq":0,"time":1,"data":{"turn":2,"trigger":{"kind":"message","source":{"kind":"user"}}}}`,
		`{"type":"step/start","seq":1,"time":2,"data":{"turn":2,"step":1}}`,
		`{"type":"assistant/message","seq":2,"time":3,"data":{"turn":2,"step":1,"content":[{"type":"tool-call","id":"a","name":"bash","arguments":"{}"},{"type":"tool-call","id":"b","name":"read","arguments":"{}"}]},"surfaceOp":"append"}`,
		`{"type":"tool/call","seq":3,"time":4,"data":{"turn":2,"step":1,"callId":"a","name":"bash","arguments":"{}"}}`,
	)
	var got []string
	for _, e := range RepairClosers(events) {
		b, _ := e.MarshalJSON()
		got = append(got, string(b))
	}
	require.Equal(t, []string{
		`{"type":"tool/result","seq":4,"time":4,"data":{"turn":2,"step":1,"callId":"a","content":[{"type":"text","text":"Tool call interrupted by a crash; no result was recorded."}],"isError":true,"error":{"name":"InterruptedError","code":"interrupted"}},"surfaceOp":"append","sourceEventSeqs":[3]}`,
		`{"type":"tool/result","seq":5,"time":4,"data":{"turn":2,"step":1,"callId":"b","content":[{"type":"text","text":"Tool call interrupted by a crash; no result was recorded."}],"isError":true,"error":{"name":"InterruptedError","code":"interrupted"}},"surfaceOp":"append"}`,
		`{"type":"step/end","seq":6,"time":4,"data":{"turn":2,"step":1}}`,
		`{"type":"turn/end","seq":7,"time":4,"data":{"turn":2,"reason":{"kind":"interrupted"}}}`,
	}, got)
	require.Nil(t, RepairClosers(build(t, `{"type":"turn/end","seq":0,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}`)))
}

func TestCommittedPrefix(t *testing.T) {
	ev := func(seq int, typ string) Candidate { return Candidate{Event: Event{Seq: seq, Type: typ}, OK: true} }
	n, err := CommittedPrefix([]Candidate{ev(0, TypeTurnStart), ev(1, TypeTurnEnd), {}, ev(3, TypeTurnStart)})
	require.NoError(t, err)
	require.Equal(t, 2, n, "a torn line after the last turn/end ends the prefix")
	_, err = CommittedPrefix([]Candidate{ev(0, TypeTurnStart), {}, ev(2, TypeTurnEnd)})
	require.EqualError(t, err, "corrupt session log: unparsable committed event at line 2")
	_, err = CommittedPrefix([]Candidate{ev(0, TypeTurnStart), ev(5, TypeStepStart), ev(2, TypeTurnEnd)})
	require.EqualError(t, err, "corrupt session log: seq gap in committed region at line 2 (expected 1, got 5)")
}
