package acp_test

// Handler tests through the public surface only (NewServer, Serve, Options
// and the Agent/Session interfaces), with the fake agent and the harness of
// stream_test.go, plus the real agent as the acp-agent composition builds it
// (composition imports acp, hence this external test package).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/composition"
	"github.com/dsh-acp/dsh-acp/session"
)

func fakeHarness(t *testing.T, opts acp.Options) (*acp.Harness, *acp.FakeAgent) {
	srv, fa := acp.NewFakeServer(opts)
	return acp.StartHarness(t, srv), fa
}

func errLine(id string, code int, msg string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":` + fmt.Sprint(code) + `,"message":` + acp.JSONQuote(msg) + `}}`
}

func invalidParams(id, detail string) string { return errLine(id, -32602, "Invalid params: "+detail) }

func TestInitialize(t *testing.T) {
	h, _ := fakeHarness(t, acp.Options{})
	const result = `{"protocolVersion":1,"agentInfo":{"name":"dsh-acp","version":"test"},"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false,"audio":false,"embeddedContext":false}},"authMethods":[]}`
	for i, params := range []string{
		`{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"_meta":{"terminal_output":true}}}`,
		`{"protocolVersion":2,"clientCapabilities":{}}`,
		`{"protocolVersion":"1"}`,
		`{}`,
	} {
		id := fmt.Sprint(i + 1)
		resp, _ := h.Roundtrip(id, "initialize", params)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":`+result+`}`, string(resp), params)
	}
	resp, _ := h.Roundtrip("9", "authenticate", `{"methodId":"x"}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":9,"result":{}}`, string(resp))
}

func TestSessionNewChecks(t *testing.T) {
	for _, c := range []struct {
		name   string
		accept bool
		params string
		want   string // error detail; "" = accepted
	}{
		{"relative cwd", false, `{"cwd":"rel/dir","mcpServers":[]}`, "cwd must be an absolute path: rel/dir"},
		{"dot cwd", false, `{"cwd":"./x","mcpServers":[]}`, "cwd must be an absolute path: ./x"},
		{"empty cwd", false, `{"cwd":"","mcpServers":[]}`, "cwd must be an absolute path: "},
		{"cwd before dirs", false, `{"cwd":"rel","additionalDirectories":["/x"],"mcpServers":[{"name":"m","command":"x","args":[],"env":[]}]}`, "cwd must be an absolute path: rel"},
		{"extra dirs", false, `{"cwd":"/w","additionalDirectories":["/x"],"mcpServers":[]}`, "additionalDirectories is not supported in this MVP"},
		{"dirs before mcp", true, `{"cwd":"/w","additionalDirectories":["/x"],"mcpServers":[{"name":"m","command":"x","args":[],"env":[]}]}`, "additionalDirectories is not supported in this MVP"},
		{"empty extra dirs", false, `{"cwd":"/w","additionalDirectories":[],"mcpServers":[]}`, ""},
		{"mcp rejected upstream", false, `{"cwd":"/w","mcpServers":[{"name":"m","command":"x","args":[],"env":[]}]}`, "mcpServers is not supported in this MVP"},
		{"mcp accepted", true, `{"cwd":"/w","mcpServers":[{"name":"m","command":"x","args":[],"env":[]},{"type":"http","name":"h","url":"https://x","headers":[]}]}`, ""},
		{"cwd kept verbatim", false, `{"cwd":"/w/../w/./x/","mcpServers":[]}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, fa := fakeHarness(t, acp.Options{Features: acp.Features{AcceptMCPServers: c.accept}})
			resp, _ := h.Roundtrip("2", "session/new", c.params)
			if c.want != "" {
				assert.Equal(t, invalidParams("2", c.want), string(resp))
				assert.Empty(t, fa.Sessions(), "no session is created")
				return
			}
			require.Len(t, fa.Sessions(), 1)
			s := fa.Sessions()[0]
			assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"`+s.ID()+`"}}`, string(resp))
			var p struct {
				Cwd string `json:"cwd"`
			}
			require.NoError(t, json.Unmarshal([]byte(c.params), &p))
			assert.Equal(t, p.Cwd, s.Log().Header().Cwd, "the header records cwd exactly as given")
		})
	}
}

func TestSessionNewAgentErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("boom <x>"), `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{"details":"boom <x>"}}}`},
		{errors.New(`{"why":"json"}`), `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{"why":"json"}}}`},
		{errors.New(""), `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{}}}`},
	} {
		srv, fa := acp.NewFakeServer(acp.Options{})
		fa.NewErr = c.err
		h := acp.StartHarness(t, srv)
		resp, _ := h.Roundtrip("1", "session/new", `{"cwd":"/w","mcpServers":[]}`)
		assert.Equal(t, c.want, string(resp))
	}
}

func TestSessionNewAdvertisesOptionsAndModes(t *testing.T) {
	srv, fa := acp.NewFakeServer(acp.Options{})
	fa.Knobs = map[string]string{"sandbox-mode": "read-only", "approval-policy": "ask"}
	fa.Modes = []string{"default", "plan"}
	h := acp.StartHarness(t, srv)
	resp, _ := h.Roundtrip("1", "session/new", `{"cwd":"/w","mcpServers":[]}`)
	sid := fa.Sessions()[0].ID()
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"`+sid+`","configOptions":[`+sandboxOption("read-only")+`,`+approvalOption("ask")+`],"modes":{"availableModes":[{"id":"default","name":"default"},{"id":"plan","name":"plan"}],"currentModeId":"default"}}}`, string(resp))
}

func sandboxOption(v string) string {
	return `{"id":"sandbox-mode","name":"Sandbox","description":"The file sandbox mode bash commands in this session run under.","category":"mode","type":"select","currentValue":"` + v + `","options":[{"value":"read-only","name":"read-only"},{"value":"workspace-write","name":"workspace-write"},{"value":"danger-full-access","name":"danger-full-access"}]}`
}

func approvalOption(v string) string {
	return `{"id":"approval-policy","name":"Approvals","description":"ask: permission prompts reach you; never: they are rejected automatically.","type":"select","currentValue":"` + v + `","options":[{"value":"ask","name":"ask"},{"value":"never","name":"never"}]}`
}

func TestPromptChecks(t *testing.T) {
	h, fa := fakeHarness(t, acp.Options{})
	sid := h.NewSession("/w")
	const rejectBlocks = "only text and resource_link prompt content is supported; image/audio/embedded resource blocks are rejected rather than silently dropped"
	for i, c := range []struct{ params, want string }{
		{acp.PromptParams("nope", "hi"), "unknown session: nope"},
		{`{"sessionId":"` + sid + `","prompt":[]}`, "empty prompt"},
		{`{"sessionId":"` + sid + `","prompt":[{"type":"text","text":" \n\t "}]}`, "empty prompt"},
		{`{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"look"},{"type":"image","data":"AAAA","mimeType":"image/png"}]}`, rejectBlocks},
		{`{"sessionId":"` + sid + `","prompt":[{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]}`, rejectBlocks},
		{`{"sessionId":"` + sid + `","prompt":[{"type":"resource","resource":{"uri":"file:///a","text":"x"}}]}`, rejectBlocks},
		{`{"sessionId":"` + sid + `","prompt":[{"type":"text","text":""},{"type":"image","data":"AAAA","mimeType":"image/png"}]}`, rejectBlocks},
	} {
		id := fmt.Sprint(i + 1)
		resp, _ := h.Roundtrip(id, "session/prompt", c.params)
		assert.Equal(t, invalidParams(id, c.want), string(resp), c.params)
	}
	assert.Empty(t, fa.Session(t, sid).Prompts(), "rejected prompts never reach the agent")
}

// The agent receives one text: text blocks and resource_link markers
// concatenated with no separator (acp-bridge § 5).
func TestPromptFlattening(t *testing.T) {
	h, fa := fakeHarness(t, acp.Options{})
	sid := h.NewSession("/w")
	for i, c := range []struct{ blocks, want string }{
		{`[{"type":"text","text":"Look at"},{"type":"resource_link","name":"a \"b\" <c>.go","uri":"file:///w/a&b.go"},{"type":"text","text":"please"}]`,
			"Look at\n[resource_link name=\"a \\\"b\\\" <c>.go\" uri=\"file:///w/a&b.go\"]\nplease"},
		{`[{"type":"resource_link","name":"only.txt","uri":"file:///only.txt","mimeType":"text/plain","size":3}]`,
			"\n[resource_link name=\"only.txt\" uri=\"file:///only.txt\"]\n"},
		{`[{"type":"text","text":"a"},{"type":"text","text":" b "},{"type":"text","text":"\u2028é\n"}]`, "a b \u2028é\n"},
	} {
		id := fmt.Sprint(i + 1)
		resp, _ := h.Roundtrip(id, "session/prompt", `{"sessionId":"`+sid+`","prompt":`+c.blocks+`}`)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{"stopReason":"end_turn"}}`, string(resp))
		ps := fa.Session(t, sid).Prompts()
		require.Len(t, ps, i+1)
		assert.Equal(t, c.want, ps[i])
	}
}

// turn/end reasons map to stop reasons or the turn-failed error (§ 5).
func TestPromptStopReasons(t *testing.T) {
	h, _ := fakeHarness(t, acp.Options{})
	sid := h.NewSession("/w")
	for i, c := range []struct{ text, want string }{
		{"go", `{"stopReason":"end_turn"}`},
		{"go #end=max-tokens", `{"stopReason":"max_tokens"}`},
		{"go #end=aborted", `{"stopReason":"cancelled"}`},
		{"go #end=disposed", `{"stopReason":"cancelled"}`},
		{"go #end=rejected", `{"stopReason":"cancelled"}`},
		{"go #end=interrupted", `{"stopReason":"end_turn"}`},
		{"go #end=error", ``},
	} {
		id := fmt.Sprint(i + 1)
		resp, before := h.Roundtrip(id, "session/prompt", acp.PromptParams(sid, c.text))
		if c.want == "" {
			assert.Equal(t, errLine(id, -32603, "Internal error: turn failed: simulated provider error (HTTP 401)"), string(resp))
		} else {
			assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":`+c.want+`}`, string(resp), c.text)
		}
		assert.Equal(t, []string{"agent_thought_chunk", "agent_message_chunk", "tool_call", "plan", "tool_call_update"}, acp.UpdateKinds(t, before),
			"every update of the turn precedes its answer")
	}
}

func TestCancel(t *testing.T) {
	h, fa := fakeHarness(t, acp.Options{})
	sid := h.NewSession("/w")
	h.Send(acp.RequestLine("1", "session/prompt", acp.PromptParams(sid, "work #block")))
	s := fa.Session(t, sid)
	s.AwaitStarted(t)
	h.Send(acp.NotificationLine("session/cancel", `{"sessionId":"`+sid+`"}`))
	resp, before := h.Await("1")
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, string(resp))
	assert.Equal(t, []string{"agent_thought_chunk", "agent_message_chunk"}, acp.UpdateKinds(t, before))
	assert.Equal(t, session.EndReason{Kind: session.EndAborted, Reason: "session/cancel"}, s.AwaitEnded(t))
	assert.Equal(t, []string{"prompt", "turn", "cancel:session/cancel", "end:aborted"}, s.Journal())

	// A cancel with nothing in flight reaches the agent and writes nothing.
	h.Send(acp.NotificationLine("session/cancel", `{"sessionId":"`+sid+`"}`))
	resp, before = h.Roundtrip("2", "authenticate", "{}")
	assert.Empty(t, before)
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, string(resp))
}

func TestSetConfigOption(t *testing.T) {
	srv, fa := acp.NewFakeServer(acp.Options{})
	h := acp.StartHarness(t, srv)
	plain := h.NewSession("/w")
	fa.Knobs = map[string]string{"sandbox-mode": "read-only", "approval-policy": "ask"}
	knobs := h.NewSession("/w")
	set := func(sid, configID, value string) string {
		f, _ := h.Call("session/set_config_option", `{"sessionId":"`+sid+`","configId":"`+configID+`","value":`+value+`}`)
		if f.Error != nil {
			return "error: " + f.Error.Message
		}
		return string(f.Result)
	}
	assert.Equal(t, `error: Invalid params: unknown session: nope`, set("nope", "sandbox-mode", `"read-only"`))
	assert.Equal(t, `error: Invalid params: unknown config option "reasoning-effort"`, set(plain, "reasoning-effort", `"high"`))
	assert.Equal(t, `error: Invalid params: unknown config option "reasoning-effort"`, set(knobs, "reasoning-effort", `"high"`))
	assert.Equal(t, `error: Invalid params: config option reasoning-effort is a select; boolean values are not accepted`, set(plain, "reasoning-effort", `true`))
	assert.Equal(t, `error: Invalid params: unknown sandbox-mode value "read-only"`, set(plain, "sandbox-mode", `"read-only"`), "not composed")
	assert.Equal(t, `error: Invalid params: unknown approval-policy value "ask"`, set(plain, "approval-policy", `"ask"`), "not composed")
	assert.Equal(t, `error: Invalid params: unknown sandbox-mode value "yolo"`, set(knobs, "sandbox-mode", `"yolo"`))
	assert.Equal(t, `error: Invalid params: unknown approval-policy value "always"`, set(knobs, "approval-policy", `"always"`))
	assert.Equal(t, `{"configOptions":[`+sandboxOption("workspace-write")+`,`+approvalOption("ask")+`]}`, set(knobs, "sandbox-mode", `"workspace-write"`))
	assert.Equal(t, `{"configOptions":[`+sandboxOption("workspace-write")+`,`+approvalOption("never")+`]}`, set(knobs, "approval-policy", `"never"`))
}

func TestSetMode(t *testing.T) {
	srv, fa := acp.NewFakeServer(acp.Options{})
	h := acp.StartHarness(t, srv)
	plain := h.NewSession("/w")
	resp, _ := h.Roundtrip("1", "session/set_mode", `{"sessionId":"`+plain+`","modeId":"plan"}`)
	assert.Equal(t, invalidParams("1", "session modes are not composed in this deployment"), string(resp))
	resp, _ = h.Roundtrip("2", "session/set_mode", `{"sessionId":"nope","modeId":"plan"}`)
	assert.Equal(t, invalidParams("2", "unknown session: nope"), string(resp))

	fa.Modes = []string{"default", "plan"}
	sid := h.NewSession("/w")
	update := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + sid + `","update":{"sessionUpdate":"current_mode_update","currentModeId":"plan"}}}`
	for _, id := range []string{"3", "4"} { // announced even when already current
		resp, before := h.Roundtrip(id, "session/set_mode", `{"sessionId":"`+sid+`","modeId":"plan"}`)
		assert.Equal(t, []string{update}, strs(before))
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`, string(resp))
	}
	resp, before := h.Roundtrip("5", "session/set_mode", `{"sessionId":"`+sid+`","modeId":"yolo"}`)
	assert.Empty(t, before)
	assert.Equal(t, invalidParams("5", `unknown mode "yolo" — available modes: default, plan`), string(resp))
}

func strs(ls [][]byte) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l)
	}
	return out
}

func TestSessionLoad(t *testing.T) {
	srv, fa := acp.NewFakeServer(acp.Options{})
	fa.Store("old-1", "/w", "first <q>")
	fa.Store("norel", "relative/dir", "x")
	h := acp.StartHarness(t, srv)
	load := func(id, sid, cwd string) ([]byte, [][]byte) {
		return h.Roundtrip(id, "session/load", `{"sessionId":"`+sid+`","cwd":"`+cwd+`","mcpServers":[]}`)
	}
	resp, _ := load("1", "nope", "/w")
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{"details":"session \"nope\" not found"}}}`, string(resp))
	resp, _ = load("2", "old-1", "/other")
	assert.Equal(t, invalidParams("2", "session old-1 cwd mismatch: persisted /w, requested /other"), string(resp))
	resp, _ = load("3", "old-1", "w")
	assert.Equal(t, invalidParams("3", "cwd must be an absolute path: w"), string(resp))
	resp, _ = load("4", "norel", "/w")
	assert.Equal(t, invalidParams("4", "session norel has no absolute persisted cwd; cannot determine its workspace (it predates per-session cwd, or was created without one)"), string(resp))

	resp, before := load("5", "old-1", "/w/")
	assert.Equal(t, `{"jsonrpc":"2.0","id":5,"result":{}}`, string(resp))
	pre := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old-1","update":`
	assert.Equal(t, []string{
		pre + `{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"first <q>"}}}}`,
		pre + `{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"think <a> & b"}}}}`,
		pre + `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"<b>&"}}}}`,
		pre + `{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"fake_tool","kind":"other","status":"in_progress","rawInput":{"q":"<a> & b"}}}}`,
		pre + `{"sessionUpdate":"plan","entries":[{"content":"write <tests> & fix","priority":"medium","status":"in_progress"},{"content":"ship","priority":"medium","status":"pending"}]}}}`,
		pre + `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"ok <done> & ` + "\u2028" + `fine"}}]}}}`,
	}, strs(before), "the whole log is replayed, user messages included, before the answer")

	resp, _ = load("6", "old-1", "/w")
	assert.Equal(t, invalidParams("6", "session old-1 is already loaded"), string(resp))

	resp, before = h.Roundtrip("7", "session/prompt", acp.PromptParams("old-1", "second"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}`, string(resp))
	assert.Equal(t, []string{"agent_thought_chunk", "agent_message_chunk", "tool_call", "plan", "tool_call_update"}, acp.UpdateKinds(t, before), "live: no user_message_chunk")
	assert.Contains(t, string(before[2]), `"toolCallId":"call_2"`, "the resumed log continues at turn 2")
}

// On EOF, Serve disposes every session (a running turn ends disposed),
// writes nothing more (not even the pending prompt's answer) and returns.
func TestEOFTeardown(t *testing.T) {
	h, fa := fakeHarness(t, acp.Options{})
	busy := h.NewSession("/a")
	idle := h.NewSession("/b")
	h.Send(acp.RequestLine("1", "session/prompt", acp.PromptParams(busy, "long #block")))
	fa.Session(t, busy).AwaitStarted(t)
	for range 2 { // the two chunks streamed before the block
		h.Next()
	}
	require.True(t, h.EOF(), "Serve returns after EOF")
	assert.Equal(t, 1, fa.Session(t, busy).Closes())
	assert.Equal(t, 1, fa.Session(t, idle).Closes())
	assert.Equal(t, session.EndReason{Kind: session.EndDisposed}, fa.Session(t, busy).AwaitEnded(t))
	ev := fa.Session(t, busy).Log().Events()
	assert.Equal(t, session.TypeTurnEnd, ev[len(ev)-1].Type, "the disposed turn's turn/end is in the log")
	// (nothing-after-EOF is TestNothingWrittenAfterEOF: it is racy today)
}

// The fake's disposed turn streams one more chunk while it is torn down;
// its update must not reach the client (acp-bridge § 1: after client EOF
// nothing more is written). Repeated: the write races the connection's
// stream close.
func TestNothingWrittenAfterEOF(t *testing.T) {
	late := 0
	const rounds = 300
	for range rounds {
		t.Run("", func(t *testing.T) {
			h, fa := fakeHarness(t, acp.Options{})
			var sids []string
			for i := range 4 {
				sid := h.NewSession("/a")
				sids = append(sids, sid)
				h.Send(acp.RequestLine(fmt.Sprint(i+1), "session/prompt", acp.PromptParams(sid, "long #block")))
				fa.Session(t, sid).AwaitStarted(t)
				h.Next()
				h.Next()
			}
			require.True(t, h.EOF())
			for _, sid := range sids {
				fa.Session(t, sid).AwaitEnded(t)
			}
			if after := h.LinesAfterEOF(); len(after) > 0 {
				late++
				t.Logf("written after EOF: %s", after[0])
			}
		})
	}
	assert.Zero(t, late, "%d of %d rounds wrote after EOF", late, rounds)
}

// ---------------------------------------------------------------------------
// The real agent, as the acp-agent composition builds it.

// scriptProvider is the scripted model (llmtest) of the real-agent tests:
// the step is chosen by the text of the last user message.
type scriptProvider struct {
	*llmtest.Model

	mu    sync.Mutex
	steps map[string]int
}

func newScriptProvider() *scriptProvider {
	p := &scriptProvider{steps: map[string]int{}}
	p.Model = llmtest.New(p.answer)
	return p
}

func lastUserText(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role == "user" && len(m.Content) > 0 && m.Content[0].Type == session.BlockText {
			return m.Content[0].Text
		}
	}
	return ""
}

func (p *scriptProvider) answer(_ context.Context, c llmtest.Call) llmtest.Step {
	text := lastUserText(c.Req)
	p.mu.Lock()
	p.steps[text]++
	step := p.steps[text]
	p.mu.Unlock()
	switch {
	case strings.HasPrefix(text, "block"):
		return llmtest.Step{Chunks: []llm.Chunk{llmtest.Text(0, "working <on> it")}, Hold: true, AbortAsFinish: true}
	case strings.HasPrefix(text, "fail"):
		return llmtest.Step{Err: &llm.Error{Message: "simulated provider error (HTTP 401)", Code: "AUTH", Status: 401}}
	case strings.HasPrefix(text, "todo") && step == 1:
		return llmtest.Step{Chunks: append(llmtest.ToolCall(0, "call_a1", "todo_write",
			`{"todos":[{"content":"write <tests> & fix","status":"in_progress"}]}`), llmtest.Finish(llm.FinishToolCalls))}
	default:
		return llmtest.Step{Chunks: []llm.Chunk{
			llmtest.Reasoning(0, "hmm <x>"),
			llmtest.Text(1, "<b>&"),
			llmtest.Text(1, " done"),
			llmtest.Usage(10, 3),
			llmtest.Finish(llm.FinishStop),
		}}
	}
}

func (p *scriptProvider) requests() []*llm.Request { return p.Requests() }

func (p *scriptProvider) lastCtx() context.Context {
	ctxs := p.Contexts()
	if len(ctxs) == 0 {
		return nil
	}
	return ctxs[len(ctxs)-1]
}

func realHarness(t *testing.T) (*acp.Harness, *scriptProvider) {
	comp, ok := composition.Builtin("acp-agent")
	require.True(t, ok)
	p := newScriptProvider()
	var n int
	var mu sync.Mutex
	srv := comp.NewServer(composition.ServerOptions{
		Provider: p,
		Store:    nil,
		Clock:    acp.FakeClock(),
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("11111111-2222-4333-8444-%012d", n)
		},
		Log:       zerolog.Nop(),
		Version:   "test",
		LaunchDir: t.TempDir(),
	})
	return acp.StartHarness(t, srv), p
}

func TestRealAgentOverPipes(t *testing.T) {
	h, p := realHarness(t)
	resp, _ := h.Roundtrip("1", "initialize", `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"dsh-acp","version":"test"},"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false,"audio":false,"embeddedContext":false}},"authMethods":[]}}`, string(resp))

	resp, _ = h.Roundtrip("2", "session/new", `{"cwd":"/work","mcpServers":[{"name":"m","command":"x","args":[],"env":[]}]}`)
	assert.Equal(t, invalidParams("2", "mcpServers is not supported in this MVP"), string(resp), "acp-agent keeps upstream's wire")

	cwd := t.TempDir()
	resp, _ = h.Roundtrip("3", "session/new", `{"cwd":`+acp.JSONQuote(cwd)+`,"mcpServers":[]}`)
	var nr struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(acp.ParseWireFrame(t, resp).Result, &nr))
	sid := nr.SessionID
	assert.Regexp(t, `^11111111-2222-4333-8444-\d{12}$`, sid)
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{"sessionId":"`+sid+`"}}`, string(resp), "acp-agent composes no config options and no modes")

	// A text turn.
	resp, before := h.Roundtrip("4", "session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hi <there> & "},{"type":"resource_link","name":"a.go","uri":"file:///a.go"}]}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn"}}`, string(resp))
	pre := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + sid + `","update":`
	assert.Equal(t, []string{
		pre + `{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm <x>"}}}}`,
		pre + `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"<b>&"}}}}`,
		pre + `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":" done"}}}}`,
	}, strs(before))
	reqs := p.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, sid, reqs[0].SessionID)
	assert.Equal(t, "hi <there> & \n[resource_link name=\"a.go\" uri=\"file:///a.go\"]\n", lastUserText(reqs[0]))

	// A tool turn: todo_write's card, the plan, the result, then the reply.
	resp, before = h.Roundtrip("5", "session/prompt", acp.PromptParams(sid, "todo please"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}`, string(resp))
	assert.Equal(t, []string{"tool_call", "plan", "tool_call_update", "agent_thought_chunk", "agent_message_chunk", "agent_message_chunk"}, acp.UpdateKinds(t, before))
	if len(before) >= 3 {
		assert.Equal(t, pre+`{"sessionUpdate":"plan","entries":[{"content":"write <tests> & fix","priority":"medium","status":"in_progress"}]}}}`, string(before[1]))
		assert.Contains(t, string(before[0]), `"toolCallId":"call_a1"`)
		assert.Contains(t, string(before[2]), `"toolCallId":"call_a1","status":"completed"`)
	}

	// A provider failure fails the prompt.
	resp, _ = h.Roundtrip("6", "session/prompt", acp.PromptParams(sid, "fail now"))
	assert.Equal(t, errLine("6", -32603, "Internal error: turn failed: simulated provider error (HTTP 401)"), string(resp))

	// Cancel mid-stream: answered at once, the model call is aborted.
	h.Send(acp.RequestLine("7", "session/prompt", acp.PromptParams(sid, "block here")))
	first := h.Next()
	assert.Equal(t, pre+`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"working <on> it"}}}}`, string(first))
	ctx := p.lastCtx()
	h.Send(acp.NotificationLine("session/cancel", `{"sessionId":"`+sid+`"}`))
	resp, _ = h.Await("7")
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{"stopReason":"cancelled"}}`, string(resp))
	select {
	case <-ctx.Done():
	case <-time.After(acp.WaitFor):
		t.Fatal("the model call was not aborted by session/cancel")
	}

	// The session still works after a cancel.
	resp, _ = h.Roundtrip("8", "session/prompt", acp.PromptParams(sid, "again"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":8,"result":{"stopReason":"end_turn"}}`, string(resp))

	// EOF with a turn in flight: Serve returns, the model call is aborted.
	h.Send(acp.RequestLine("9", "session/prompt", acp.PromptParams(sid, "block again")))
	h.Next()
	ctx = p.lastCtx()
	require.True(t, h.EOF())
	select {
	case <-ctx.Done():
	case <-time.After(acp.WaitFor):
		t.Fatal("teardown did not abort the running model call")
	}
	assert.Empty(t, strs(h.LinesAfterEOF()))
}

// The same-write cancel race against the real agent: the turn must not
// keep running (here: block a later prompt) after the client was told
// "cancelled".
func TestRealAgentCancelInSameWrite(t *testing.T) {
	h, _ := realHarness(t)
	sid := h.NewSession(t.TempDir())
	for i := range 10 {
		id := fmt.Sprint(100 + 2*i)
		h.Send(acp.RequestLine(id, "session/prompt", acp.PromptParams(sid, "block forever")),
			acp.NotificationLine("session/cancel", `{"sessionId":"`+sid+`"}`))
		resp, _ := h.Await(id)
		require.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{"stopReason":"cancelled"}}`, string(resp))
		next := fmt.Sprint(101 + 2*i)
		h.Send(acp.RequestLine(next, "session/prompt", acp.PromptParams(sid, "then this")))
		resp, _ = h.Await(next) // fails (times out) when the cancelled turn still holds the session
		require.Equal(t, `{"jsonrpc":"2.0","id":`+next+`,"result":{"stopReason":"end_turn"}}`, string(resp))
	}
}
