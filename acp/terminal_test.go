package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/bash"
	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
)

// bashAgent is the fake agent whose sessions run one real bash call per
// prompt (the prompt text is the call's arguments), with the host the
// bridge gives them and, when confiner is set, confined to their cwd.
type bashAgent struct {
	*FakeAgent
	confiner *sandbox.Provider
	tmpBase  string

	mu       sync.Mutex
	sessions []*bashSession
}

func (a *bashAgent) NewSession(ctx context.Context, o agent.SessionOptions) (Served, error) {
	s, err := a.FakeAgent.NewSession(ctx, o)
	if err != nil {
		return nil, err
	}
	fs := s.(*FakeSession)
	opts := bash.Options{KillGrace: 300 * time.Millisecond, Environ: func() []string { return append(os.Environ(), "AGENT_SECRET_TOKEN=agent") }}
	if a.confiner != nil {
		opts.Sandbox = &bash.Sandboxing{Confiner: a.confiner, SessionTmp: true, TmpBase: a.tmpBase,
			Root: func(*capabilities.Call) string { return o.Cwd },
			Mode: func(*capabilities.Call) string { return "workspace-write" }}
	}
	tool := bash.NewTool(opts)
	bs := &bashSession{FakeSession: fs, tool: tool, reg: capabilities.NewRegistry(tool), host: o.Host(fs.ID())}
	a.mu.Lock()
	a.sessions = append(a.sessions, bs)
	a.mu.Unlock()
	return bs, nil
}

type bashSession struct {
	*FakeSession
	tool *bash.Tool
	reg  *capabilities.Registry
	host *capabilities.Host

	mu     sync.Mutex
	cancel context.CancelFunc
}

// first is the agent's first session.
func (a *bashAgent) first() *bashSession {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[0]
}

func (s *bashSession) Tools() *capabilities.Registry { return s.reg }
func (s *bashSession) Cwd() string                   { return s.Log().Header().Cwd }
func (s *bashSession) Host() *capabilities.Host      { return s.host }

// Prompt runs the bash call whose arguments are text.
func (s *bashSession) Prompt(ctx context.Context, text string) session.EndReason {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
	l := s.Log()
	turn := session.LastTurn(l.Events()) + 1
	callID := fmt.Sprintf("call_%d", turn)
	l.Append(session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	l.Append(session.TypeUserMessage, session.Message{Content: []session.Block{session.TextBlock("run it")}, Source: session.UserSource})
	l.Append(session.TypeStepStart, session.StepRef{Turn: turn, Step: 1})
	l.Append(session.TypeToolCall, session.ToolCall{Turn: turn, Step: 1, CallID: callID, Name: "bash", Arguments: text})
	o := s.reg.Execute(ctx, s, callID, "bash", text)
	l.Append(session.TypeToolResult, session.ToolResult{Turn: turn, Step: 1, CallID: callID, Content: o.Content, IsError: o.IsError})
	l.Append(session.TypeStepEnd, session.StepRef{Turn: turn, Step: 1})
	r := session.EndReason{Kind: session.EndCompleted}
	if ctx.Err() != nil {
		r = session.EndReason{Kind: session.EndAborted, Reason: "cancelled"}
	}
	l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: r})
	return r
}

func (s *bashSession) Cancel(string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
}

func (s *bashSession) Interrupt() { s.Cancel("") }

func (s *bashSession) Close(ctx context.Context) error {
	s.Cancel("")
	_ = s.tool.Close(ctx)
	return s.Log().Flush(ctx)
}

// terminalClient is the harness's client seen from the terminal tests:
// its acpclient.Terminals implement terminal/* the way Zed does
// (terminal/create really runs the command it is given, in its cwd and
// its own process group, with the client's own environment plus the
// given one; kill and release kill the process group). until reads the
// server's lines as an editor does; every response the client sent is
// checked against the schema at cleanup.
type terminalClient struct {
	t     *testing.T
	h     *Harness
	terms *acpclient.Terminals

	lines [][]byte // the server's lines until read, in order
}

// methods returns the methods of the requests the client received, in
// order.
func (c *terminalClient) methods() []string {
	var out []string
	for _, r := range c.h.Conn.Requests() {
		out = append(out, r.Method)
	}
	return out
}

// requests returns the requests the client received, in order.
func (c *terminalClient) requests() []acpclient.Request { return c.h.Conn.Requests() }

// term returns the terminal the agent created i-th (from 0).
func (c *terminalClient) term(i int) *acpclient.Terminal {
	c.t.Helper()
	created := c.terms.Created()
	require.Greater(c.t, len(created), i, "terminals created")
	return created[i]
}

// until reads the server's lines until stop accepts one, which it
// returns.
func (c *terminalClient) until(stop func(WireFrame) bool) WireFrame {
	for {
		line := c.h.NextWithin(20 * time.Second)
		f := ParseWireFrame(c.t, line)
		c.lines = append(c.lines, line)
		if stop(f) {
			return f
		}
	}
}

// checkResponses validates every response the client sent to a terminal
// request against the schema, as the answer to that request's method.
func (c *terminalClient) checkResponses() {
	methods := map[string]string{}
	for _, r := range c.h.Conn.Requests() {
		methods[string(r.ID)] = r.Method
	}
	for _, l := range c.h.Conn.Transcript() {
		if l.Dir != acpclient.Sent {
			continue
		}
		var f WireFrame
		if json.Unmarshal(l.Data, &f) != nil || f.Method != "" {
			continue
		}
		if m := methods[string(f.ID)]; strings.HasPrefix(m, "terminal/") {
			if err := loadACPSchema(c.t).CheckFrame(l.Data, m); err != nil {
				c.t.Errorf("client response fails the schema: %v: %s", err, l.Data)
			}
		}
	}
}

// update is one session/update's update object.
type update struct {
	SessionUpdate string            `json:"sessionUpdate"`
	ToolCallID    string            `json:"toolCallId"`
	Status        string            `json:"status"`
	Content       []json.RawMessage `json:"content"`
	Meta          json.RawMessage   `json:"_meta"`
}

func updateOf(t *testing.T, f WireFrame) (update, bool) {
	if f.Method != "session/update" {
		return update{}, false
	}
	var p struct {
		Update update `json:"update"`
	}
	require.NoError(t, json.Unmarshal(f.Params, &p))
	return p.Update, true
}

// terminalWire starts a bridge over a bashAgent with the default
// composition's terminal options, initialized with caps.
func terminalWire(t *testing.T, confiner *sandbox.Provider, opts Options, caps string) (*Harness, *terminalClient, *bashAgent, string) {
	t.Helper()
	fa := NewFakeAgent()
	ba := &bashAgent{FakeAgent: fa, confiner: confiner, tmpBase: t.TempDir()}
	opts.AgentName, opts.AgentVersion = "dsh-acp", "test"
	srv := NewServer(ba, opts, zerolog.Nop())
	terms := &acpclient.Terminals{Env: append(os.Environ(), "CLIENT_SECRET_TOKEN=client")}
	c := &terminalClient{t: t, terms: terms}
	t.Cleanup(c.checkResponses) // after the harness ended the connection: every response sent
	h := StartHarnessWith(t, srv, acpclient.Options{Terminals: terms})
	c.h = h
	resp, _ := h.Roundtrip("1", "initialize", `{"protocolVersion":1,"clientCapabilities":`+caps+`}`)
	require.Nil(t, ParseWireFrame(t, resp).Error)
	ws := t.TempDir()
	return h, c, ba, ws
}

func bashArgs(command string, extra string) string {
	return `{"command":` + JSONQuote(command) + `,"description":"run it"` + extra + `}`
}

func isResponse(id string) func(WireFrame) bool {
	return func(f WireFrame) bool { return f.Method == "" && string(f.ID) == id }
}

func isMethod(method string) func(WireFrame) bool {
	return func(f WireFrame) bool { return f.Method == method }
}

// both holds once a and b have each held for some frame (in either order).
func both(a, b func(WireFrame) bool) func(WireFrame) bool {
	var sawA, sawB bool
	return func(f WireFrame) bool {
		sawA, sawB = sawA || a(f), sawB || b(f)
		return sawA && sawB
	}
}

func TestClientTerminalRunsTheConfinedCommand(t *testing.T) {
	b := &sandbox.Bwrap{}
	if _, err := b.Probe(context.Background()); err != nil {
		t.Skipf("SANDBOX NOT TESTED through client terminals: bwrap unusable: %v", err)
	}
	h, c, ba, ws := terminalWire(t, sandbox.NewProvider(b), Options{Features: Features{ClientTerminals: true, LiveOutput: true, EditorCards: true}}, `{"terminal":true}`)
	sid := h.NewSession(ws)
	outside := filepath.Join(suiteOutside(t), "escaped")
	cmd := `echo "hello [$CLIENT_SECRET_TOKEN] [$AGENT_SECRET_TOKEN]"; echo in > made; echo out > ` + outside
	h.Send(RequestLine("7", "session/prompt", PromptParams(sid, bashArgs(cmd, ""))))
	c.until(both(isResponse("7"), isMethod("terminal/release")))

	require.Equal(t, []string{"terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"}, c.methods())
	var create CreateTerminalRequest
	require.NoError(t, json.Unmarshal(c.requests()[0].Params, &create))
	require.Equal(t, sid, create.SessionID)
	require.Equal(t, "env", filepath.Base(create.Command))
	require.Equal(t, "-i", create.Args[0])
	i := slices.IndexFunc(create.Args[1:], func(a string) bool { return !strings.Contains(a, "=") }) + 1
	require.Equal(t, "bwrap", filepath.Base(create.Args[i]), "the client runs the sandbox, not the shell: %q", create.Args)
	require.True(t, filepath.IsAbs(create.Args[i]))
	require.Equal(t, ws, create.Cwd)
	require.Equal(t, bash.TailBytes, create.OutputByteLimit)

	// The command ran confined in the client: inside the workspace it
	// wrote, outside it could not, and it saw neither environment's secret.
	require.FileExists(t, filepath.Join(ws, "made"))
	require.NoFileExists(t, outside)

	// The card: the call, the terminal while it runs, the result keeping
	// the terminal; then the release.
	var cards []update
	releaseAt, resultAt := -1, -1
	for n, line := range c.lines {
		f := ParseWireFrame(t, line)
		if f.Method == "terminal/release" {
			releaseAt = n
		}
		if u, ok := updateOf(t, f); ok && u.ToolCallID == "call_1" {
			cards = append(cards, u)
			if u.Status != "in_progress" {
				resultAt = n
			}
		}
	}
	require.Len(t, cards, 3)
	require.Equal(t, "tool_call", cards[0].SessionUpdate)
	require.Equal(t, "in_progress", cards[1].Status)
	require.JSONEq(t, `{"type":"terminal","terminalId":"term-1"}`, string(cards[1].Content[1]))
	require.Equal(t, "failed", cards[2].Status) // editor cards: exit 1 fails the card
	require.JSONEq(t, `{"type":"terminal","terminalId":"term-1"}`, string(cards[2].Content[1]))
	require.Less(t, resultAt, releaseAt)

	// The model's result is the terminal's output with the usual markers.
	res := lastResult(t, ba.first().Log())
	require.True(t, strings.HasPrefix(res, "hello [] []\n"), res)
	require.Contains(t, res, "[sandbox: file access denied under workspace-write mode]")
	require.True(t, strings.HasSuffix(res, "\n[exit code: 1]"), res)

	// A load shows the recorded result (the terminal no longer exists).
	p := newPresenter(ba.first().Tools(), ws, false, true)
	var last any
	for _, ev := range ba.first().Log().Events() {
		for _, u := range p.present(ev) {
			last = u
		}
	}
	card, ok := last.(ToolCallUpdateCard)
	require.True(t, ok, "%#v", last)
	require.Equal(t, "text", card.Content[0].Content.Type)
	require.Contains(t, card.Content[0].Content.Text, "```console\nhello [] []\n")
}

// suiteOutside is a directory outside /tmp (a workspace beneath /tmp
// leaves /tmp writable under bwrap's session tmp).
func suiteOutside(t *testing.T) string {
	d, err := os.MkdirTemp("/var/tmp", "dsh-acp-outside-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func lastResult(t *testing.T, l *session.Log) string {
	t.Helper()
	evs := l.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		var r session.ToolResult
		if evs[i].Type == session.TypeToolResult && evs[i].Decode(&r) == nil {
			require.Len(t, r.Content, 1)
			return r.Content[0].Text
		}
	}
	t.Fatal("no tool/result")
	return ""
}

func TestClientTerminalTimeoutKillsThenReleases(t *testing.T) {
	h, c, ba, ws := terminalWire(t, nil, Options{Features: Features{ClientTerminals: true, LiveOutput: true}}, `{"terminal":true}`)
	sid := h.NewSession(ws)
	h.Send(RequestLine("7", "session/prompt", PromptParams(sid, bashArgs("echo begun; sleep 30", `,"timeoutMs":300`))))
	c.until(both(isResponse("7"), isMethod("terminal/release")))
	require.Equal(t, []string{"terminal/create", "terminal/wait_for_exit", "terminal/kill", "terminal/output", "terminal/release"}, c.methods())
	require.Equal(t, "begun\n[timed out after 300ms]\n[killed by signal: SIGKILL]", lastResult(t, ba.first().Log()))
}

func TestClientTerminalCancelKillsThenReleases(t *testing.T) {
	h, c, _, ws := terminalWire(t, nil, Options{Features: Features{ClientTerminals: true, LiveOutput: true}}, `{"terminal":true}`)
	sid := h.NewSession(ws)
	h.Send(RequestLine("7", "session/prompt", PromptParams(sid, bashArgs("sleep 30", ""))))
	c.until(func(f WireFrame) bool { return f.Method == "terminal/wait_for_exit" })
	h.Send(NotificationLine("session/cancel", `{"sessionId":`+JSONQuote(sid)+`}`))
	c.until(both(isResponse("7"), isMethod("terminal/release")))
	require.Equal(t, []string{"terminal/create", "terminal/wait_for_exit", "terminal/kill", "terminal/release"}, c.methods())
	term := c.term(0)
	require.Equal(t, "term-1", term.ID)
	<-term.Done()
}

func TestClientTerminalSessionCloseKillsThenReleases(t *testing.T) {
	h, c, _, ws := terminalWire(t, nil, Options{Features: Features{ClientTerminals: true, Lifecycle: true}}, `{"terminal":true}`)
	sid := h.NewSession(ws)
	h.Send(RequestLine("7", "session/prompt", PromptParams(sid, bashArgs("sleep 30", ""))))
	c.until(func(f WireFrame) bool { return f.Method == "terminal/wait_for_exit" })
	h.Send(RequestLine("8", "session/close", `{"sessionId":`+JSONQuote(sid)+`}`))
	c.until(isResponse("8"))
	require.Equal(t, []string{"terminal/create", "terminal/wait_for_exit", "terminal/kill", "terminal/release"}, c.methods())
	term := c.term(0)
	require.Equal(t, "term-1", term.ID)
	<-term.Done()
}

func TestClientTerminalsOnlyWhenComposedAndAdvertised(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		caps string
	}{
		{"upstream composition", Options{}, `{"terminal":true}`},
		{"not advertised", Options{Features: Features{ClientTerminals: true}}, `{"terminal":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, c, ba, ws := terminalWire(t, nil, tc.opts, tc.caps)
			sid := h.NewSession(ws)
			h.Send(RequestLine("7", "session/prompt", PromptParams(sid, bashArgs("echo local", ""))))
			c.until(isResponse("7"))
			require.Empty(t, c.methods())
			require.Equal(t, "local\n", lastResult(t, ba.first().Log()))
			var kinds []string
			for _, l := range c.lines {
				if u, ok := updateOf(t, ParseWireFrame(t, l)); ok {
					kinds = append(kinds, u.SessionUpdate+":"+u.Status)
				}
			}
			require.Equal(t, []string{"tool_call:in_progress", "tool_call_update:completed"}, kinds)
		})
	}
}

// gatedCommand prints a line, waits for the test to open its fifo, and
// prints another.
func gatedCommand(t *testing.T) (command string, open func()) {
	fifo := filepath.Join(t.TempDir(), "gate")
	mkfifo(t, fifo)
	return "echo first; read x < " + fifo + "; echo second", func() { require.NoError(t, os.WriteFile(fifo, []byte("go\n"), 0o600)) }
}

func TestLiveOutputAsCardText(t *testing.T) {
	h, c, ba, ws := terminalWire(t, nil, Options{Features: Features{LiveOutput: true}}, `{}`)
	sid := h.NewSession(ws)
	command, open := gatedCommand(t)
	h.Send(RequestLine("7", "session/prompt", PromptParams(sid, bashArgs(command, ""))))
	// The client sees the first line while the command still waits.
	f := c.until(func(f WireFrame) bool {
		u, ok := updateOf(t, f)
		return ok && u.Status == "in_progress" && u.SessionUpdate == "tool_call_update" &&
			strings.Contains(string(u.Content[len(u.Content)-1]), "```console\\nfirst\\n```")
	})
	u, _ := updateOf(t, f)
	require.JSONEq(t, `{"type":"content","content":{"type":"text","text":"run it"}}`, string(u.Content[0]))
	open()
	final := c.until(isResponse("7"))
	require.Nil(t, final.Error)
	require.Equal(t, "first\nsecond\n", lastResult(t, ba.first().Log()))
	// The log holds no live update: a load shows the call and its result.
	for _, ev := range ba.first().Log().Events() {
		require.NotEqual(t, session.TypeToolProgress, ev.Type)
	}
	var last update
	for _, l := range c.lines {
		if u, ok := updateOf(t, ParseWireFrame(t, l)); ok {
			last = u
		}
	}
	require.Equal(t, "completed", last.Status)
	require.Contains(t, string(last.Content[0]), "first\\nsecond")
}

func TestLiveOutputAsTerminalOutputMeta(t *testing.T) {
	h, c, _, ws := terminalWire(t, nil, Options{Features: Features{LiveOutput: true}}, `{"_meta":{"terminal_output":true}}`)
	sid := h.NewSession(ws)
	command, open := gatedCommand(t)
	h.Send(RequestLine("7", "session/prompt", PromptParams(sid, bashArgs(command, ""))))
	c.until(func(f WireFrame) bool {
		u, ok := updateOf(t, f)
		return ok && u.Status == "in_progress" && u.SessionUpdate == "tool_call_update"
	})
	open()
	c.until(isResponse("7"))
	// The output went out as terminal_output data, each byte once: live
	// while it ran, nothing again in the result, which adds the exit.
	var data strings.Builder
	var final update
	for _, l := range c.lines {
		u, ok := updateOf(t, ParseWireFrame(t, l))
		if !ok || u.SessionUpdate != "tool_call_update" {
			continue
		}
		var m struct {
			TerminalOutput *struct {
				TerminalID string `json:"terminal_id"`
				Data       string `json:"data"`
			} `json:"terminal_output"`
			TerminalExit json.RawMessage `json:"terminal_exit"`
		}
		require.NoError(t, json.Unmarshal(u.Meta, &m))
		require.NotNil(t, m.TerminalOutput)
		require.Equal(t, "call_1", m.TerminalOutput.TerminalID)
		data.WriteString(m.TerminalOutput.Data)
		final = u
		if u.Status == "in_progress" {
			require.Nil(t, m.TerminalExit)
		} else {
			require.JSONEq(t, `{"terminal_id":"call_1","exit_code":0}`, string(m.TerminalExit))
		}
	}
	require.Equal(t, "completed", final.Status)
	require.Equal(t, "first\nsecond\n", data.String())
}

func TestLiveCardsFollowOnlyShownTerminalCards(t *testing.T) {
	var lc liveCards
	_, ok := lc.update("call_9", capabilities.LiveView{Output: "x"}, false)
	require.False(t, ok, "a call the client has no terminal card for (a child's) is not updated")
	lc.open("call_9")
	u, ok := lc.update("call_9", capabilities.LiveView{Output: "abc", Offset: 0}, true)
	require.True(t, ok)
	require.Equal(t, "abc", u.(TerminalUpdateCard).Meta.TerminalOutput.Data)
	_, ok = lc.update("call_9", capabilities.LiveView{Output: "abc", Offset: 0}, true)
	require.False(t, ok, "nothing new")
	u, _ = lc.update("call_9", capabilities.LiveView{Output: "yz", Offset: 10}, true)
	require.Equal(t, "\r\n[7 bytes not shown]\r\nyz", u.(TerminalUpdateCard).Meta.TerminalOutput.Data)
	c, ok := lc.take("call_9")
	require.True(t, ok)
	require.Equal(t, int64(12), c.sent)
	_, ok = lc.take("call_9")
	require.False(t, ok)
}
