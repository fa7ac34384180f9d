package acp

// This file holds the wire harness and the in-memory fake agent every test
// of the package uses (exported so the external acp_test package can use
// them too: composition imports acp, so the tests that drive a composed
// runtime live there), and the framing tests (acp-bridge § 1).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// ---------------------------------------------------------------------------
// LineStream unit tests

// TestLineStreamReadObject feeds malformed and well-formed lines straight
// into the library adapter's ReadObject (conn.go): each bad line is
// answered on the writer, the valid ones come out (ids rewritten to raw
// tokens) and reading continues.
func TestLineStreamReadObject(t *testing.T) {
	in := strings.Join([]string{
		"",
		"   ",
		"\r",
		"not json",
		`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`,
		`{"foo":1}`,
		`{"jsonrpc":"2.0","id":5}`,
		`42`,
		`{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{}}` + "\r",
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","id":true,"method":"authenticate"}`,
		`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"x","result":1}`,
		`{"jsonrpc":"2.0","id":"tail","method":"authenticate"}`, // no trailing newline
	}, "\n")
	var out bytes.Buffer
	s := NewLineStream(strings.NewReader(in), &out, nil, zerolog.Nop())
	o := newObjectStream(s)

	var msgs []string
	for {
		var m json.RawMessage
		err := o.ReadObject(&m)
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		msgs = append(msgs, string(m))
	}
	// Params are set aside (keyed by "meta") so the library never re-encodes them.
	require.Equal(t, []string{
		`{"jsonrpc":"2.0","id":"\u0000raw:1","method":"authenticate","meta":0}`,
		`{"jsonrpc":"2.0","method":"session/cancel","meta":1}`,
		`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`,
		`{"jsonrpc":"2.0","id":"\u0000raw:\"tail\"","method":"authenticate"}`,
	}, msgs)
	for key, want := range []string{`{}`, `{"sessionId":"s"}`} {
		meta := json.RawMessage(strconv.Itoa(key))
		p, ok := o.takeParams(&meta)
		require.True(t, ok)
		require.Equal(t, want, string(p))
		_, ok = o.takeParams(&meta)
		require.False(t, ok, "params are handed out once")
	}

	require.NoError(t, s.Flush()) // writes are asynchronous
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, got, 7, out.String())
	assert.Equal(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, got[0])
	for i, want := range []struct {
		id string
	}{{"null"}, {"null"}, {"5"}, {"null"}, {"null"}, {"7"}} {
		f := ParseWireFrame(t, []byte(got[i+1]))
		require.NotNil(t, f.Error, got[i+1])
		assert.EqualValues(t, CodeInvalidRequest, f.Error.Code, got[i+1])
		assert.Equal(t, "Invalid Request", f.Error.Message, got[i+1])
		assert.Equal(t, want.id, string(f.ID), got[i+1])
	}
	for _, l := range got {
		validateFrame(t, []byte(l), "")
	}
}

// TestLineStreamAgentRequests checks the framing of agent→client requests
// (written by the library through WriteObject) and the routing of the client's
// responses: ids count from 0, key order jsonrpc/id/method/params, no HTML
// escaping, and the read side keeps working while a call is pending.
func TestLineStreamAgentRequests(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inW.Close()
	s := NewLineStream(inR, outW, nil, zerolog.Nop())
	handled := make(chan string, 4)
	conn := openConn(context.Background(), s, recordingHandler(handled), zerolog.Nop())
	defer conn.Close()
	out := bufio.NewReader(outR)
	readLine := func() string {
		t.Helper()
		ch := make(chan string, 1)
		go func() {
			l, _ := out.ReadString('\n')
			ch <- l
		}()
		select {
		case l := <-ch:
			require.True(t, strings.HasSuffix(l, "\n"), l)
			return strings.TrimSuffix(l, "\n")
		case <-time.After(WaitFor):
			t.Fatal("no agent request written")
			return ""
		}
	}
	type permParams struct {
		SessionID string `json:"sessionId"`
		ToolCall  struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"toolCall"`
		Options []map[string]string `json:"options"`
	}
	perm := permParams{SessionID: "s-1"}
	perm.ToolCall.ToolCallID = "call_<1>&"
	perm.Options = []map[string]string{{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"}}

	type callResult struct {
		v   json.RawMessage
		err error
	}
	results := make(chan callResult, 2)
	call := func(method string, params any) {
		var v json.RawMessage
		wait, err := conn.Send(context.Background(), method, jsonx.MustMarshal(params))
		if err == nil {
			err = wait(context.Background(), &v)
		}
		results <- callResult{v, err}
	}
	go call("session/request_permission", perm)
	line := readLine()
	assert.Equal(t, `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s-1","toolCall":{"toolCallId":"call_<1>&"},"options":[{"kind":"allow_once","name":"Allow once","optionId":"allow-once"}]}}`, line,
		"params keep their own key order (struct order; the option maps are sorted by encoding/json); the envelope order and literal <>& are the stream's")
	validateFrame(t, []byte(line), "session/request_permission")

	// While the call is pending, inbound requests are still read and handled.
	writeIn := func(l string) {
		done := make(chan struct{})
		go func() { _, _ = io.WriteString(inW, l+"\n"); close(done) }()
		select {
		case <-done:
		case <-time.After(WaitFor):
			t.Fatal("stream did not read input while a call was pending")
		}
	}
	writeIn(`{"jsonrpc":"2.0","method":"_probe","params":{}}`)
	select {
	case m := <-handled:
		assert.Equal(t, "_probe", m)
	case <-time.After(WaitFor):
		t.Fatal("notification not handled while a call was pending")
	}
	writeIn(`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}}`)
	select {
	case r := <-results:
		require.NoError(t, r.err)
		assert.JSONEq(t, `{"outcome":{"outcome":"selected","optionId":"allow-once"}}`, string(r.v))
	case <-time.After(WaitFor):
		t.Fatal("call result not delivered")
	}

	type elicitParams struct {
		SessionID       string          `json:"sessionId"`
		Mode            string          `json:"mode"`
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	go call("elicitation/create", elicitParams{SessionID: "s-1", Mode: "form", Message: "Pick <one> & go\u2028",
		RequestedSchema: json.RawMessage(`{"type":"object","title":"Question","properties":{"custom":{"type":"string","title":"Pick <one> & go"}},"required":["custom"]}`)})
	line = readLine()
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"sessionId":"s-1","mode":"form","message":"Pick <one> & go`+"\u2028"+`","requestedSchema":{"type":"object","title":"Question","properties":{"custom":{"type":"string","title":"Pick <one> & go"}},"required":["custom"]}}}`, line)
	validateFrame(t, []byte(line), "elicitation/create")
	writeIn(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}`)
	select {
	case r := <-results:
		var ce *ClientError
		require.ErrorAs(t, r.err, &ce, "an error response fails the call with the client's error")
		assert.Equal(t, "elicitation/create", ce.Method)
		assert.EqualValues(t, CodeInternalError, ce.Err.Code)
		assert.NotErrorAs(t, r.err, new(*Error), "a client's error is never mistaken for one of ours (toError would echo it)")
	case <-time.After(WaitFor):
		t.Fatal("call error not delivered")
	}
}

// recordingHandler reports the method of every inbound message.
type recordingHandler chan<- string

func (h recordingHandler) handle(_ context.Context, _ RequestID, method string, _ json.RawMessage) {
	h <- method
}

func (h recordingHandler) handleNotification(_ context.Context, method string, _ json.RawMessage) {
	h <- method
}

// ---------------------------------------------------------------------------
// Server framing tests

func newFakeHarness(t *testing.T, opts Options) (*Harness, *FakeAgent) {
	srv, fa := NewFakeServer(opts)
	return StartHarness(t, srv), fa
}

const initParams = `{"protocolVersion":1,"clientCapabilities":{}}`

const initResult = `{"protocolVersion":1,"agentInfo":{"name":"dsh-acp","version":"test"},"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false,"audio":false,"embeddedContext":false}},"authMethods":[]}`

func TestParseErrorKeepsServing(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	h.Send("this is not json", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+initParams+`}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, string(h.Next()))
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":`+initResult+`}`, string(h.Next()))

	// Truncated JSON, two objects on a line, trailing garbage: all -32700.
	h.Send(`{"jsonrpc":"2.0","id":2,"method":"authenticate"`, `{}{}`, `{"a":1} x`)
	for range 3 {
		assert.Equal(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, string(h.Next()))
	}
	resp, before := h.Roundtrip("3", "authenticate", "{}")
	assert.Empty(t, before)
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{}}`, string(resp))
}

func TestInvalidRequests(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	for _, c := range []struct{ line, id string }{
		{`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, "null"},
		{`[]`, "null"},
		{`"initialize"`, "null"},
		{`null`, "null"},
		{`{"foo":1}`, "null"},
		{`{"jsonrpc":"2.0","id":5}`, "5"},
		{`{"jsonrpc":"2.0","id":"q"}`, `"q"`},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}`, "null"},
	} {
		h.Send(c.line)
		line := h.Next()
		f := ParseWireFrame(t, line)
		require.NotNil(t, f.Error, "%s → %s", c.line, line)
		assert.EqualValues(t, CodeInvalidRequest, f.Error.Code, "%s → %s", c.line, line)
		assert.Equal(t, "Invalid Request", f.Error.Message)
		assert.Equal(t, c.id, string(f.ID), "%s → %s", c.line, line)
		assert.True(t, bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":`+c.id+`,"error":{"code":-32600,"message":"Invalid Request"`)), string(line))
	}
	resp, before := h.Roundtrip("6", "authenticate", "{}")
	assert.Empty(t, before)
	assert.Equal(t, `{"jsonrpc":"2.0","id":6,"result":{}}`, string(resp))
}

func TestMethodNotFound(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	for i, m := range []string{"x/y", "session/list", "session/close", "logout", "_vendor/thing", "providers/list", "nes/suggest"} {
		id := fmt.Sprint(i + 1)
		resp, _ := h.Roundtrip(id, m, "{}")
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32601,"message":"\"Method not found\": `+m+`","data":{"method":"`+m+`"}}}`, string(resp))
	}
}

// Notifications never get a response: unknown ones, _-prefixed ones and a
// cancel for an unknown session are ignored.
func TestNotificationsIgnored(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	h.Send(
		NotificationLine("x/y", "{}"),
		NotificationLine("_foo", `{"a":1}`),
		NotificationLine("_zed/ping", `null`),
		`{"jsonrpc":"2.0","method":"document/didOpen"}`,
		NotificationLine("session/cancel", `{"sessionId":"nope"}`),
		NotificationLine("session/cancel", `"garbage"`),
		NotificationLine("initialize", initParams), // a request method sent as a notification
	)
	resp, before := h.Roundtrip("1", "authenticate", "{}")
	assert.Empty(t, before, "notifications must produce no output")
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, string(resp))
}

func TestCRLFAndBlankLines(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	h.SendRaw([]byte("\r\n\n   \n\t\r\n"+`{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{}}`+"\r\n\r\n"+
		`  {"jsonrpc":"2.0","id":2,"method":"initialize","params":`+initParams+`}  `+"\r\n"), WaitFor)
	h.Expect("1", "authenticate")
	h.Expect("2", "initialize")
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, string(h.Next()))
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":`+initResult+`}`, string(h.Next()))
}

// Request ids are echoed byte-identically, whatever their JSON type, on
// immediate answers, errors and deferred (prompt) answers.
func TestRequestIDsEchoed(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	sid := h.NewSession("/work")
	ids := []string{`"abc"`, `-1`, `9007199254740993`, `1e3`, `0`, `18446744073709551616`, `"a\"b\u00e9 <&>"`, `""`, `-0`, `null`}
	for _, id := range ids {
		resp, _ := h.Roundtrip(id, "authenticate", "{}")
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`, string(resp))
	}
	for _, id := range ids[:6] {
		resp, _ := h.Roundtrip(id, "no/such", "")
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32601,"message":"\"Method not found\": no/such","data":{"method":"no/such"}}}`, string(resp))
	}
	for _, id := range []string{`9007199254740993`, `"abc"`, `-1`, `18446744073709551616`} {
		resp, _ := h.Roundtrip(id, "session/prompt", PromptParams(sid, "hello"))
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{"stopReason":"end_turn"}}`, string(resp))
	}
	resp, _ := h.Roundtrip(`-7`, "session/new", `{"cwd":"relative"}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":-7,"error":{"code":-32602,"message":"Invalid params: cwd must be an absolute path: relative"}}`, string(resp))
}

// A full turn of the fake: the updates in log order with their exact
// bytes (key order, literal <, >, &, U+2028), then the answer.
func TestPromptStreamsUpdatesInKeyOrder(t *testing.T) {
	h, fa := newFakeHarness(t, Options{})
	sid := h.NewSession("/work")
	resp, before := h.Roundtrip("7", "session/prompt", PromptParams(sid, "hi"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}`, string(resp))
	pre := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + sid + `","update":`
	want := []string{
		pre + `{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"think <a> & b"}}}}`,
		pre + `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"<b>&"}}}}`,
		pre + `{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"fake_tool","kind":"other","status":"in_progress","rawInput":{"q":"<a> & b"}}}}`,
		pre + `{"sessionUpdate":"plan","entries":[{"content":"write <tests> & fix","priority":"medium","status":"in_progress"},{"content":"ship","priority":"medium","status":"pending"}]}}}`,
		pre + `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"ok <done> & ` + "\u2028" + `fine"}}]}}}`,
	}
	got := make([]string, len(before))
	for i, l := range before {
		got[i] = string(l)
	}
	assert.Equal(t, want, got)
	assert.Equal(t, []string{"hi"}, fa.Session(t, sid).Prompts())
}
