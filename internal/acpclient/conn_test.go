package acpclient_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
)

// The client advertises exactly what it hosts, keeps every line both ways
// and the agent's output byte for byte, and answers what it does not host
// "method not found".
func TestTranscriptCapabilitiesAndDefaults(t *testing.T) {
	c := connect(t, acpclient.Options{Terminals: &acpclient.Terminals{}})
	tr := c.Transcript()
	require.Len(t, tr, 2)
	assert.Equal(t, acpclient.Sent, tr[0].Dir)
	assert.Equal(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientCapabilities":{"terminal":true},"protocolVersion":1}}`, string(tr[0].Data))
	assert.Equal(t, acpclient.Received, tr[1].Dir)
	assert.Equal(t, `{"jsonrpc":"2.0","id":0,"result":{"agentCapabilities":{},"authMethods":[],"protocolVersion":1}}`, string(tr[1].Data))
	assert.Equal(t, string(tr[1].Data)+"\n", string(c.Output()))

	sid := newSession(t, c)
	got := run(t, c, sid, step{"fs/read_text_file", map[string]any{"sessionId": sid, "path": "/etc/hostname"}})
	assert.Equal(t, `{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found: fs/read_text_file"}}`, got[0])
	reqs := c.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "fs/read_text_file", reqs[0].Method)
	assert.Empty(t, c.Strays())
}

func TestExplicitCapabilitiesAreSentAsGiven(t *testing.T) {
	caps := map[string]any{"fs": map[string]bool{"readTextFile": true}, "_meta": map[string]any{"x": 1}}
	c := connect(t, acpclient.Options{FS: acpclient.NewFS(t.TempDir()), ClientCapabilities: caps})
	assert.Equal(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientCapabilities":{"_meta":{"x":1},"fs":{"readTextFile":true}},"protocolVersion":1}}`,
		string(c.Transcript()[0].Data))
	assert.Equal(t, map[string]any{"fs": map[string]bool{"readTextFile": true, "writeTextFile": true}},
		acpclient.New(nopCloser{}, strings.NewReader(""), acpclient.Options{FS: acpclient.NewFS("/")}).Capabilities())
	assert.Equal(t, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
		acpclient.New(nopCloser{}, strings.NewReader(""), acpclient.Options{Handlers: map[string]acpclient.Handler{
			"elicitation/create": acpclient.ElicitCancel}}).Capabilities())
}

// NoTranscript keeps nothing but still counts, dispatches and answers.
func TestNoTranscript(t *testing.T) {
	var seen int
	c := connect(t, acpclient.Options{NoTranscript: true, OnReceive: func([]byte, time.Time) bool { seen++; return false }})
	sid := newSession(t, c)
	got := run0(t, c, sid)
	assert.Equal(t, 3, c.Len(), "initialize, session/new and the prompt's answers")
	assert.Equal(t, 3, seen)
	assert.Empty(t, c.Received())
	assert.Empty(t, c.Transcript())
	assert.Empty(t, c.Check())
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, got)
}

// Without a transcript the read buffer is reused: a response a Call
// awaits is copied, so it survives the 64 KiB of updates read after it,
// and the notifications are still counted.
func TestNoTranscriptKeepsAwaitedResponses(t *testing.T) {
	r, w := io.Pipe()
	c := acpclient.New(nopCloser{io.Discard}, r, acpclient.Options{NoTranscript: true})
	k, err := c.Start("session/prompt", nil)
	require.NoError(t, err)
	resp := `{"jsonrpc":"2.0","id":0,"result":{"stopReason":"end_turn"}}`
	update := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + strings.Repeat("x", 1000) + `"}}}}` + "\n"
	go func() {
		_, _ = io.WriteString(w, resp+"\n"+strings.Repeat(update, 200))
		_ = w.Close()
	}()
	<-c.Done()
	f, err := k.Wait(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, resp, string(f.Raw))
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(f.Result))
	assert.Equal(t, 201, c.Len())
	assert.Empty(t, c.Updates())
}

// methodLog is a FrameChecker that records the method each frame is
// checked as the answer to.
type methodLog []string

func (m *methodLog) CheckFrame(_ []byte, method string) error {
	*m = append(*m, method)
	return nil
}

// Two requests sent with one id are answered in order: Check validates
// each response as the answer to its own request.
func TestCheckPairsReusedIDsInOrder(t *testing.T) {
	r, w := io.Pipe()
	var checked methodLog
	c := acpclient.New(nopCloser{io.Discard}, r, acpclient.Options{Schema: &checked})
	_, err := c.StartID(json.RawMessage("7"), "session/new", map[string]any{})
	require.NoError(t, err)
	_, err = c.StartID(json.RawMessage("7"), "session/prompt", map[string]any{})
	require.NoError(t, err)
	go func() {
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{}}`+"\n"+`{"jsonrpc":"2.0","id":7,"result":{}}`+"\n")
		_ = w.Close()
	}()
	<-c.Done()
	assert.Empty(t, c.Check())
	assert.Equal(t, methodLog{"session/new", "session/prompt"}, checked)
}

// run0 prompts with an empty script and returns the result.
func run0(t *testing.T, c *acpclient.Conn, sid string) string {
	t.Helper()
	res, err := c.Call(ctx(t), "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "[]"}}})
	require.NoError(t, err)
	return string(res)
}

// Permission requests are answered by the script's kinds in order, then
// cancelled; a kind not offered is reported.
func TestPermissionScript(t *testing.T) {
	script := acpclient.NewPermissionScript("allow_always", "reject_once", "allow_once")
	c := connect(t, acpclient.Options{Handlers: map[string]acpclient.Handler{
		"session/request_permission": script.Handler()}})
	sid := newSession(t, c)
	ask := step{"session/request_permission", map[string]any{"sessionId": sid, "toolCall": map[string]any{"toolCallId": "c1"},
		"options": []map[string]string{{"optionId": "a1", "name": "Allow", "kind": "allow_once"},
			{"optionId": "aa", "name": "Always", "kind": "allow_always"}, {"optionId": "r1", "name": "Reject", "kind": "reject_once"}}}}
	got := run(t, c, sid, ask, ask, ask, ask)
	assert.Equal(t, []string{
		`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"optionId":"aa","outcome":"selected"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"optionId":"r1","outcome":"selected"}}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"outcome":{"optionId":"a1","outcome":"selected"}}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"cancelled"}}}`,
	}, got)
	assert.Len(t, script.Asked(), 4)
	require.NoError(t, script.Err())

	miss := acpclient.NewPermissionScript("allow_always")
	c2 := connect(t, acpclient.Options{Handlers: map[string]acpclient.Handler{
		"session/request_permission": miss.Handler(), "elicitation/create": acpclient.ElicitCancel}})
	sid2 := newSession(t, c2)
	only := step{"session/request_permission", map[string]any{"sessionId": sid2, "toolCall": map[string]any{"toolCallId": "c1"},
		"options": []map[string]string{{"optionId": "a1", "name": "Allow", "kind": "allow_once"}}}}
	got = run(t, c2, sid2, only, step{"elicitation/create", map[string]any{"sessionId": sid2, "mode": "form", "message": "?",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}}}})
	assert.Equal(t, `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`, got[0])
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"action":"cancel"}}`, got[1])
	assert.ErrorContains(t, miss.Err(), `no offered permission option has kind "allow_always"`)
}

// WaitUpdate waits for a matching update without sleeping; NextLine walks
// the received lines; a stray response is noticed.
func TestWaitingHelpers(t *testing.T) {
	c := connect(t, acpclient.Options{})
	sid := newSession(t, c)
	text, _ := json.Marshal([]step{{"fs/read_text_file", map[string]any{"sessionId": sid, "path": "/one"}},
		{"fs/read_text_file", map[string]any{"sessionId": sid, "path": "/two"}}})
	k, err := c.Start("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": string(text)}}})
	require.NoError(t, err)
	u, i, err := c.WaitUpdate(ctx(t), 0, func(u acpclient.Update) bool { return strings.Contains(string(u.Raw), `"id\":1,`) })
	require.NoError(t, err)
	assert.Equal(t, 1, i)
	assert.Equal(t, "agent_message_chunk", u.Kind)
	assert.Equal(t, sid, u.SessionID)
	f, err := k.Wait(ctx(t))
	require.NoError(t, err)
	assert.Nil(t, f.Error)

	// Lines 0-1: initialize, session/new; then request, answer-chunk pairs.
	line, err := c.NextLine(ctx(t), 2)
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"path":"/one","sessionId":"s1"}}`, string(line))
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.NextLine(short, 100)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A response with an id nobody asked for.
	mark := c.Len()
	require.NoError(t, c.SendLines([]byte(`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"[]"}]}}`)))
	line, err = c.NextLine(ctx(t), mark)
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","id":"p","result":{"stopReason":"end_turn"}}`, string(line))
	assert.Len(t, c.Strays(), 1)
}

// Check finds frames that break the envelope rules or the schema, and a
// last line without "\n"; a clean transcript has none.
func TestCheckFindsViolations(t *testing.T) {
	s := schema(t)
	bad := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}`, // good initialize answer
		`{"id":1,"jsonrpc":"2.0","result":{"sessionId":"s"}}`,     // key order
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\u003c"}}}}`, // HTML escape
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"bogus"}}}`,                                                         // schema
		`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`,
	}, "\n")
	c := acpclient.New(nopCloser{&strings.Builder{}}, strings.NewReader(bad), acpclient.Options{Schema: s})
	c.Expect("0", "initialize")
	c.Expect("1", "session/new")
	c.Expect("2", "session/prompt")
	<-c.Done()
	errs := c.Check()
	require.Len(t, errs, 4, "%v", errs)
	assert.ErrorContains(t, errs[0], "envelope keys")
	assert.ErrorContains(t, errs[1], `\u003c`)
	assert.ErrorContains(t, errs[2], "SessionNotification")
	assert.ErrorContains(t, errs[3], `not terminated by \n`)
	var fe *acpclient.FrameError
	require.ErrorAs(t, errs[3], &fe)
	assert.Equal(t, 4, fe.Index)

	// A response is checked against its request's method: a prompt's
	// answer is no answer to session/new.
	c = acpclient.New(nopCloser{&strings.Builder{}}, strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`+"\n"), acpclient.Options{Schema: s})
	c.Expect("1", "session/new")
	<-c.Done()
	require.Len(t, c.Check(), 1)
}

// Spawn runs the agent as a process: requests and answers over its
// stdin/stdout, and Close ends it through EOF.
func TestSpawn(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "ACPCLIENT_TEST_AGENT=1")
	p, err := acpclient.Spawn(cmd, acpclient.Options{Schema: schema(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Kill() })
	_, err = p.Initialize(ctx(t))
	require.NoError(t, err)
	sid := newSession(t, p.Conn)
	assert.Equal(t, "s1", sid)
	require.NoError(t, p.Close(waitFor))
	select {
	case <-p.Stopped():
	default:
		t.Fatal("Stopped is not closed after Close")
	}
	assert.Empty(t, p.Check())
	assert.Empty(t, p.Stderr())
}
