package acp

// This file holds the wire harness and the in-memory fake agent every test
// of the package uses (exported so the external acp_test package can use
// them too: composition imports acp, so the tests that drive a composed
// runtime live there), and the framing tests (acp-bridge § 1).

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// ---------------------------------------------------------------------------
// Concurrency and ordering

// The read loop never blocks on a prompt: while one is mid-stream, other
// requests (initialize, a second session, its prompt, set_config_option on
// the busy session) are answered.
func TestReadLoopServesWhilePromptInFlight(t *testing.T) {
	h, fa := newFakeHarness(t, Options{})
	a := h.NewSession("/work/a")
	h.Send(RequestLine("1", "session/prompt", PromptParams(a, "wait #block")))
	fa.Session(t, a).AwaitStarted(t)

	resp, _ := h.Roundtrip("2", "initialize", initParams)
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":`+initResult+`}`, string(resp))
	b := h.NewSession("/work/b")
	resp, _ = h.Roundtrip("3", "session/prompt", PromptParams(b, "quick"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`, string(resp))
	resp, _ = h.Roundtrip("4", "session/set_config_option", `{"sessionId":"`+a+`","configId":"reasoning-effort","value":"high"}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params: unknown config option \"reasoning-effort\""}}`, string(resp))
	resp, _ = h.Roundtrip("5", "session/prompt", PromptParams(a, "again"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: a prompt is already in flight for this session"}}`, string(resp))

	h.Send(NotificationLine("session/cancel", `{"sessionId":"`+a+`"}`))
	resp, _ = h.Await("1")
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, string(resp))
	r := fa.Session(t, a).AwaitEnded(t)
	assert.Equal(t, session.EndReason{Kind: session.EndAborted, Reason: "session/cancel"}, r)
	assert.Equal(t, []string{"wait #block"}, fa.Session(t, a).Prompts(), "the rejected prompt never reached the agent")

	// The aborted turn's answer is not sent twice, and the session takes a
	// new prompt.
	resp, before := h.Roundtrip("6", "session/prompt", PromptParams(a, "after"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":6,"result":{"stopReason":"end_turn"}}`, string(resp))
	for _, l := range before {
		assert.NotEqual(t, "1", string(ParseWireFrame(t, l).ID), "second answer to the cancelled prompt: %s", l)
	}
}

// A cancel written in the same write as the prompt it cancels is never
// lost: the prompt is answered cancelled and the agent's turn either
// observes the cancel or is dropped before it starts (its context is
// already cancelled). Repeated, because the failure mode is a scheduling
// race.
func TestCancelInSameWriteAsPrompt(t *testing.T) {
	h, fa := newFakeHarness(t, Options{})
	lost := 0
	const rounds = 10
	for i := range rounds {
		sid := h.NewSession("/work")
		id := fmt.Sprint(1000 + i)
		h.Send(RequestLine(id, "session/prompt", PromptParams(sid, "long #block")),
			NotificationLine("session/cancel", `{"sessionId":"`+sid+`"}`))
		resp, _ := h.Await(id)
		require.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{"stopReason":"cancelled"}}`, string(resp))
		s := fa.Session(t, sid)
		select {
		case r := <-s.ended:
			assert.Equal(t, session.EndAborted, r.Kind)
			assert.Equal(t, "session/cancel", r.Reason)
			j := s.Journal()
			require.GreaterOrEqual(t, len(j), 2, j)
			if j[0] != "prompt" {
				// The cancel reached the session first; the turn's own
				// context carries it, so the turn is dropped or aborted.
				assert.True(t, slices.Contains(j, "dropped") || slices.Contains(j, "end:aborted"),
					"a cancel seen before the prompt must drop or abort its turn: %v", j)
			}
		case <-time.After(2 * time.Second):
			lost++
			t.Logf("round %d: journal %v — the turn is still running after its cancel", i, s.Journal())
			s.Close(context.Background()) // unblock it
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d cancels written with their prompt were lost: the turn ran on after the client got stopReason cancelled", lost, rounds)
	}
}

// Notifications emitted inside a turn precede the prompt's answer, and a
// cancelled turn's late updates may follow it; no update of a session
// reaches another session.
func TestUpdatesAreDemultiplexed(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	a := h.NewSession("/a")
	b := h.NewSession("/b")
	h.Send(RequestLine("1", "session/prompt", PromptParams(a, "one")), RequestLine("2", "session/prompt", PromptParams(b, "two")))
	seen := map[string][]string{}
	answered := map[string]bool{}
	for len(answered) < 2 {
		f := ParseWireFrame(t, h.Next())
		if f.Method == "session/update" {
			var p struct {
				SessionID string `json:"sessionId"`
			}
			require.NoError(t, json.Unmarshal(f.Params, &p))
			require.False(t, answered[map[string]string{a: "1", b: "2"}[p.SessionID]], "update after its prompt was answered: %s", f.Raw)
			seen[p.SessionID] = append(seen[p.SessionID], string(f.Raw))
			continue
		}
		answered[string(f.ID)] = true
		assert.Equal(t, `{"stopReason":"end_turn"}`, string(f.Result))
	}
	assert.Len(t, seen[a], 5)
	assert.Len(t, seen[b], 5)
}

// Agent→client requests work while a prompt is in flight: the tool's
// permission request (Server.Answer, the approval.Answerer the bridge
// provides) is written between the tool's tool_call and its
// tool_call_update with ids counting from 0, the read loop keeps serving
// other requests while it is pending, and the client's answer maps to the
// outcome (acp-bridge § 13).
func TestPermissionRequestDuringPrompt(t *testing.T) {
	srv, fa := NewFakeServer(Options{})
	outcomes := make(chan approval.Outcome, 8)
	fa.Hook = func(ctx context.Context, s *FakeSession, text string) {
		calls := s.Log().Events()
		var c session.ToolCall
		for _, ev := range calls {
			if ev.Type == session.TypeToolCall {
				require.NoError(t, ev.Decode(&c))
			}
		}
		out, ok, err := srv.Answer(ctx, s.ID(), approval.Request{ToolName: c.Name, CallID: c.CallID, Reason: "needs <net> & disk"})
		assert.True(t, ok)
		assert.NoError(t, err)
		outcomes <- out
	}
	h := StartHarness(t, srv)
	sid := h.NewSession("/work")
	pre := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + sid + `","update":`
	for i, c := range []struct {
		reply string
		want  approval.Outcome
	}{
		{`"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}`, approval.AllowedOnce},
		{`"result":{"outcome":{"outcome":"selected","optionId":"reject-once"}}`, approval.Rejected},
		{`"result":{"outcome":{"outcome":"cancelled"}}`, approval.Cancelled},
		{`"error":{"code":-32603,"message":"Internal error"}`, approval.Unavailable},
	} {
		pid := fmt.Sprint(10 + i)
		h.Send(RequestLine(pid, "session/prompt", PromptParams(sid, "go")))
		callID := fmt.Sprintf("call_%d", i+1)
		var upd []string
		var req []byte
		for req == nil {
			line := h.Next()
			if f := ParseWireFrame(t, line); f.Method == "session/request_permission" {
				req = line
			} else {
				upd = append(upd, string(line))
			}
		}
		assert.Equal(t, []string{"agent_thought_chunk", "agent_message_chunk", "tool_call", "plan"}, UpdateKinds(t, toLines(upd)))
		wantID := fmt.Sprint(i)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+wantID+`,"method":"session/request_permission","params":{"sessionId":"`+sid+`","toolCall":{"toolCallId":"`+callID+`"},"options":[{"optionId":"allow-once","name":"Allow once","kind":"allow_once"},{"optionId":"reject-once","name":"Reject","kind":"reject_once"}]}}`, string(req))

		// The read loop serves while the agent waits for the client.
		resp, _ := h.Roundtrip(fmt.Sprint(20+i), "initialize", initParams)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+fmt.Sprint(20+i)+`,"result":`+initResult+`}`, string(resp))
		other := h.NewSession("/other")
		assert.NotEqual(t, sid, other)

		h.Send(`{"jsonrpc":"2.0","id":` + wantID + `,` + c.reply + `}`)
		select {
		case out := <-outcomes:
			assert.Equal(t, c.want, out, c.reply)
		case <-time.After(WaitFor):
			t.Fatalf("permission answer %s not delivered", c.reply)
		}
		resp, before := h.Await(pid)
		assert.Equal(t, []string{pre + `{"sessionUpdate":"tool_call_update","toolCallId":"` + callID + `","status":"completed","content":[{"type":"content","content":{"type":"text","text":"ok <done> & ` + "\u2028" + `fine"}}]}}}`}, toStrings(before))
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+pid+`,"result":{"stopReason":"end_turn"}}`, string(resp))
	}
}

func toLines(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func toStrings(ls [][]byte) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l)
	}
	return out
}

// ask_user_question's elicitation/create requests (Server.Ask) go out one
// per question, in order, while the prompt is in flight; the form follows
// acp-bridge § 14 and the answers map back.
func TestElicitationDuringPrompt(t *testing.T) {
	srv, fa := NewFakeServer(Options{})
	type result struct {
		answers []capabilities.Answer
		err     error
	}
	results := make(chan result, 4)
	fa.Hook = func(ctx context.Context, s *FakeSession, text string) {
		a, err := srv.Ask(ctx, s.ID(), []capabilities.Question{
			{ID: "q1", Question: "Pick <one> & go", Options: []capabilities.QuestionOption{{Label: "a<b", Description: "first & best"}, {Label: "c"}}},
			{ID: "q2", Header: "Reason", Question: "Why?"},
			{ID: "q3", Question: "Which?", Options: []capabilities.QuestionOption{{Label: "x"}, {Label: "y"}}, MultiSelect: true},
		})
		results <- result{a, err}
	}
	h := StartHarness(t, srv)
	sid := h.NewSession("/work")
	h.Send(RequestLine("5", "session/prompt", PromptParams(sid, "ask")))
	nextRequest := func() []byte {
		t.Helper()
		for {
			line := h.Next()
			if f := ParseWireFrame(t, line); f.Method != "" && f.ID != nil {
				return line
			}
		}
	}
	assert.Equal(t, `{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"sessionId":"`+sid+`","mode":"form","message":"Pick <one> & go","requestedSchema":{"type":"object","title":"Question","properties":{"choice":{"type":"string","title":"Pick <one> & go","description":"Choose one option, or fill a custom answer below.","oneOf":[{"const":"a<b","title":"a<b: first & best"},{"const":"c","title":"c"}]},"custom":{"type":"string","title":"Custom answer","description":"Optional free-form answer. Leave empty to use the selected option."}},"required":[]}}}`, string(nextRequest()))
	resp, _ := h.Roundtrip("6", "authenticate", "{}")
	assert.Equal(t, `{"jsonrpc":"2.0","id":6,"result":{}}`, string(resp))
	h.Send(`{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"choice":"a<b","custom":"  "}}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"sessionId":"`+sid+`","mode":"form","message":"Why?","requestedSchema":{"type":"object","title":"Reason","properties":{"custom":{"type":"string","title":"Why?"}},"required":["custom"]}}}`, string(nextRequest()))
	h.Send(`{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"custom":"because <x>"}}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{"sessionId":"`+sid+`","mode":"form","message":"Which?","requestedSchema":{"type":"object","title":"Question","properties":{"choice":{"type":"array","title":"Which?","description":"Choose one or more options, or fill a custom answer below.","items":{"anyOf":[{"const":"x","title":"x"},{"const":"y","title":"y"}]}},"custom":{"type":"string","title":"Custom answer","description":"Optional free-form answer. Leave empty to use the selected option."}},"required":[]}}}`, string(nextRequest()))
	h.Send(`{"jsonrpc":"2.0","id":2,"result":{"action":"accept","content":{"choice":["x","","y"]}}}`)
	select {
	case r := <-results:
		require.NoError(t, r.err)
		because := "because <x>"
		assert.Equal(t, []capabilities.Answer{{ID: "q1", Selected: []string{"a<b"}}, {ID: "q2", Selected: []string{}, Custom: &because}, {ID: "q3", Selected: []string{"x", "y"}}}, r.answers)
	case <-time.After(WaitFor):
		t.Fatal("answers not delivered")
	}
	resp, _ = h.Await("5")
	assert.Equal(t, `{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}`, string(resp))

	// A declined form fails the question.
	h.Send(RequestLine("7", "session/prompt", PromptParams(sid, "ask again")))
	assert.Contains(t, string(nextRequest()), `"id":3,"method":"elicitation/create"`)
	h.Send(`{"jsonrpc":"2.0","id":3,"result":{"action":"decline"}}`)
	select {
	case r := <-results:
		require.Error(t, r.err)
		assert.Equal(t, "ask_user_question was cancelled by the user", r.err.Error())
	case <-time.After(WaitFor):
		t.Fatal("decline not delivered")
	}
	resp, _ = h.Await("7")
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}`, string(resp))
}
