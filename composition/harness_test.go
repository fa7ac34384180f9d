package composition_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/composition"
	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/acpschema"
	"github.com/dsh-acp/dsh-acp/internal/workertest"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
)

// TestMain lets the test binary serve as the Landlock launcher, as the real
// binary does.
func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	os.Exit(workertest.Main(m))
}

// waitFor bounds every wait in these tests.
const waitFor = 10 * time.Second

// ---------------------------------------------------------------------------
// Scripted model.

// toolCall is one call the scripted model makes.
type toolCall struct {
	Name string
	Args string
}

// scriptedProvider is the scripted model (llmtest) of these tests: the
// first step of a turn makes the tool calls scripted for the prompt text,
// and the step after a tool result answers "done". A prompt without a
// script answers "ok" at once. A cancelled step ends with an aborted
// finish.
type scriptedProvider struct {
	*llmtest.Model

	mu      sync.Mutex
	calls   map[string][]toolCall // prompt text → calls of the first step
	barrier map[string]*barrier   // prompt text → rendezvous before streaming
	gates   map[string]*gate      // prompt text → hold of the first step
	nextID  int
}

// barrier holds every party until all have arrived (or the wait times out).
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	all     chan struct{}
	timeout bool
}

func newBarrier(n int) *barrier { return &barrier{n: n, all: make(chan struct{})} }

func (b *barrier) wait() {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-time.After(waitFor):
		b.mu.Lock()
		b.timeout = true
		b.mu.Unlock()
	}
}

func (b *barrier) timedOut() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.timeout
}

func newProvider() *scriptedProvider {
	p := &scriptedProvider{calls: map[string][]toolCall{}, barrier: map[string]*barrier{}, gates: map[string]*gate{}}
	p.Model = llmtest.New(p.answer)
	return p
}

// gate holds the first step of a prompt: reached closes when the step
// begins, and the step streams once release is closed (or the wait times out).
type gate struct {
	reached, release chan struct{}
	once             sync.Once
}

// hold makes the first step of prompt wait for the gate.
func (p *scriptedProvider) hold(prompt string) *gate {
	g := &gate{reached: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gates[prompt] = g
	return g
}

// waitReached waits (bounded) until the held step began.
func (g *gate) waitReached(t *testing.T) {
	t.Helper()
	select {
	case <-g.reached:
	case <-time.After(waitFor):
		t.Fatal("the held model step never began")
	}
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// script makes the model answer prompt with calls.
func (p *scriptedProvider) script(prompt string, calls ...toolCall) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[prompt] = calls
}

// rendezvous makes the first steps of prompts wait for each other.
func (p *scriptedProvider) rendezvous(prompts ...string) *barrier {
	b := newBarrier(len(prompts))
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range prompts {
		p.barrier[pr] = b
	}
	return b
}

func (p *scriptedProvider) requests() []*llm.Request { return p.Requests() }

// requestsFor returns the requests made for one session.
func (p *scriptedProvider) requestsFor(sid string) []*llm.Request { return p.RequestsFor(sid) }

// position reads the request: the prompt being answered, and whether a tool
// result came after it (then the model wraps up).
func position(req *llm.Request) (prompt string, afterTool bool) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" || len(m.Content) == 0 {
			continue
		}
		if m.Content[0].Type == session.BlockToolResult {
			afterTool = true
			continue
		}
		if m.Content[0].Type == session.BlockText && !strings.HasPrefix(m.Content[0].Text, "<context ") &&
			!strings.HasPrefix(m.Content[0].Text, "<steering ") {
			return m.Content[0].Text, afterTool
		}
	}
	return "", afterTool
}

func toolNames(req *llm.Request) []string { return llmtest.ToolNames(req) }

// answer is the model's step for one call.
func (p *scriptedProvider) answer(ctx context.Context, c llmtest.Call) llmtest.Step {
	prompt, afterTool := position(c.Req)
	p.mu.Lock()
	calls := p.calls[prompt]
	b := p.barrier[prompt]
	var g *gate
	if !afterTool && len(calls) > 0 {
		g = p.gates[prompt]
		delete(p.gates, prompt) // holds one step only
	}
	base := p.nextID
	p.nextID += len(calls)
	p.mu.Unlock()
	if afterTool || len(calls) == 0 {
		text := "ok"
		if afterTool {
			text = "done"
		}
		return llmtest.Step{AbortAsFinish: true, Chunks: append(llmtest.TextBlock(0, text),
			llmtest.Usage(10, 1), llmtest.Finish(llm.FinishStop))}
	}
	var chunks []llm.Chunk
	for i, c := range calls {
		chunks = append(chunks, llmtest.ToolCall(i, fmt.Sprintf("call_%d", base+i), c.Name, c.Args)...)
	}
	return llmtest.Step{
		AbortAsFinish: true,
		Before: func(ctx context.Context) {
			if b != nil {
				b.wait()
			}
			if g != nil {
				close(g.reached)
				select {
				case <-g.release:
				case <-ctx.Done():
				case <-time.After(waitFor):
				}
			}
		},
		Chunks: append(chunks, llmtest.Finish(llm.FinishToolCalls)),
	}
}

// ---------------------------------------------------------------------------
// Scripted ACP client: an acpclient.Conn with the helpers these tests use.

// frame is one JSON-RPC message.
type frame struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// agentAnswer answers an agent→client request: a result, or nil for a
// method-not-found error.
type agentAnswer func(method string, params json.RawMessage) any

// noReply, returned by an agentAnswer, leaves the agent's request unanswered.
type noReply struct{}

// fallback turns an agentAnswer into the client's handler of the requests
// no other handler takes.
func (a agentAnswer) fallback() acpclient.Handler {
	return func(_ context.Context, req acpclient.Request) (any, error) {
		var res any
		if a != nil {
			res = a(req.Method, req.Params)
		}
		switch res.(type) {
		case noReply:
			return acpclient.NoReply, nil
		case nil:
			return nil, &acpclient.Error{Code: acpclient.CodeMethodNotFound, Message: "Method not found: " + req.Method}
		}
		return res, nil
	}
}

// client is the scripted ACP client of a server: numbered requests (from
// 0), recorded inbound lines, scripted answers to the agent's requests.
type client struct {
	t *testing.T
	// conn is the connection (its transcript, and the FS and Terminals it
	// hosts when serveClient was given them).
	conn *acpclient.Conn
}

var (
	schemaOnce sync.Once
	schema     *acpschema.Validator
	schemaErr  error

	unstableOnce sync.Once
	unstable     *acpschema.Validator
	unstableErr  error
)

// schemas returns the stable ACP schema and the unstable one (frames only
// clients that advertise an unstable capability get are checked against it).
func schemas(t *testing.T) (*acpschema.Validator, *acpschema.Validator) {
	t.Helper()
	schemaOnce.Do(func() { schema, schemaErr = acpschema.Stable() })
	require.NoError(t, schemaErr)
	unstableOnce.Do(func() { unstable, unstableErr = acpschema.Unstable() })
	require.NoError(t, unstableErr)
	return schema, unstable
}

func (c *client) send(v any) {
	require.NoError(c.t, c.conn.Send(v))
}

// request sends a request and returns its id and the channel its response
// arrives on (closed if the agent's output ends first).
func (c *client) request(method string, params any) (int, <-chan frame) {
	k, err := c.conn.Start(method, params)
	require.NoError(c.t, err)
	var id int
	require.NoError(c.t, json.Unmarshal(k.ID, &id))
	ch := make(chan frame, 1)
	go func() {
		f, err := k.Wait(context.Background())
		if err != nil {
			close(ch)
			return
		}
		var fr frame
		_ = json.Unmarshal(f.Raw, &fr)
		ch <- fr
	}()
	return id, ch
}

// await waits (bounded) for a response.
func (c *client) await(ch <-chan frame, what string) frame {
	c.t.Helper()
	select {
	case f, ok := <-ch:
		require.True(c.t, ok, "%s: the agent closed its output before answering", what)
		return f
	case <-time.After(waitFor):
		c.t.Fatalf("%s: no answer within %s", what, waitFor)
	}
	return frame{}
}

// call sends a request and requires a successful response.
func (c *client) call(method string, params any) json.RawMessage {
	c.t.Helper()
	_, ch := c.request(method, params)
	f := c.await(ch, method)
	require.Empty(c.t, string(f.Error), "%s failed", method)
	return f.Result
}

// snapshot returns the agent's lines so far.
func (c *client) snapshot() []string { return strs(c.conn.Received()) }

// since returns the agent's lines written after mark lines.
func (c *client) since(mark int) []string { return strs(c.conn.Since(mark)) }

func (c *client) mark() int { return c.conn.Len() }

func strs(lines [][]byte) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}

// updates returns the session/update payloads for sid among lines.
func updates(lines []string, sid string) []string {
	var out []string
	for _, l := range lines {
		var f struct {
			Method string `json:"method"`
			Params struct {
				SessionID string          `json:"sessionId"`
				Update    json.RawMessage `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(l), &f) == nil && f.Method == "session/update" && f.Params.SessionID == sid {
			out = append(out, string(f.Params.Update))
		}
	}
	return out
}

// changeUpdates is updates without the session's command list, which is
// announced asynchronously right after session/new (and load) and may land
// in any later window of the test.
func changeUpdates(lines []string, sid string) []string {
	var out []string
	for _, u := range updates(lines, sid) {
		if !strings.Contains(u, `"sessionUpdate":"available_commands_update"`) {
			out = append(out, u)
		}
	}
	return out
}

// agentRequests returns the agent→client requests named method among lines.
func agentRequests(lines []string, method string) []frame {
	var out []frame
	for _, l := range lines {
		var f frame
		if json.Unmarshal([]byte(l), &f) == nil && f.Method == method && len(f.ID) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Server.

// server is one in-process composition server over pipes.
type server struct {
	c    *client
	stop func()
}

// serve starts the named built-in composition's server on store, with the
// real sandbox provider, and initializes it with clientCaps.
func serve(t *testing.T, name string, store session.Store, launchDir string, p *scriptedProvider, clientCaps any, answer agentAnswer) *server {
	t.Helper()
	return serveWith(t, name, store, launchDir, p, clientCaps, answer, nil)
}

// serveWith is serve with the server options adjusted by opt.
func serveWith(t *testing.T, name string, store session.Store, launchDir string, p *scriptedProvider, clientCaps any, answer agentAnswer, opt func(*composition.ServerOptions)) *server {
	t.Helper()
	return serveClient(t, name, store, launchDir, p, acpclient.Options{ClientCapabilities: clientCaps, Fallback: answer.fallback()}, opt)
}

// serveClient is serveWith with the client's own options: an editor that
// hosts files (copts.FS) or terminals (copts.Terminals), answers the
// agent's requests with copts.Handlers, and advertises what it hosts
// (unless copts.ClientCapabilities says otherwise).
func serveClient(t *testing.T, name string, store session.Store, launchDir string, p *scriptedProvider, copts acpclient.Options, opt func(*composition.ServerOptions)) *server {
	t.Helper()
	comp, ok := composition.Builtin(name)
	require.True(t, ok, name)
	confiner, err := sandbox.NewDefaultProvider()
	require.NoError(t, err)
	home := t.TempDir() // the user's hook files are the test's, never the machine's
	so := composition.ServerOptions{Provider: p, Store: store, Log: zerolog.Nop(), Version: "test",
		LaunchDir: launchDir, Confiner: confiner, Getenv: func(k string) string {
			if k == "HOME" {
				return home
			}
			return ""
		}}
	if opt != nil {
		opt(&so)
	}
	srv := comp.NewServer(so)
	if copts.Schema == nil {
		copts.Schema, copts.Unstable = schemas(t)
	}
	conn := acpclient.Serve(srv.Serve, copts)
	c := &client{t: t, conn: conn}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = conn.CloseWrite()
			select {
			case <-conn.Stopped():
			case <-time.After(waitFor):
				t.Errorf("server did not stop within %s after stdin closed", waitFor)
			}
		})
	}
	t.Cleanup(func() {
		stop()
		select {
		case <-conn.Done():
		case <-time.After(waitFor):
			t.Errorf("the server's output did not end within %s of its stop", waitFor)
		}
		conn.Report(t)
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, err = conn.Initialize(ctx)
	require.NoError(t, err, "initialize")
	return &server{c: c, stop: stop}
}

// openStore opens a jsonl store on root.
func openStore(t *testing.T, root string) *jsonl.Store {
	t.Helper()
	s, err := jsonl.Open(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// sessionResult is the result of session/new or session/load.
type sessionResult struct {
	SessionID     string `json:"sessionId"`
	ConfigOptions []struct {
		ID           string `json:"id"`
		CurrentValue string `json:"currentValue"`
	} `json:"configOptions"`
	Modes *struct {
		AvailableModes []struct {
			ID string `json:"id"`
		} `json:"availableModes"`
		CurrentModeID string `json:"currentModeId"`
	} `json:"modes"`
}

// values maps config option ids to their current values.
func (r sessionResult) values() map[string]string {
	out := map[string]string{}
	for _, o := range r.ConfigOptions {
		out[o.ID] = o.CurrentValue
	}
	return out
}

func decodeResult(t *testing.T, raw json.RawMessage) sessionResult {
	t.Helper()
	var r sessionResult
	require.NoError(t, json.Unmarshal(raw, &r), string(raw))
	return r
}

func (s *server) newSession(t *testing.T, cwd string) sessionResult {
	t.Helper()
	return decodeResult(t, s.c.call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}))
}

func (s *server) loadSession(t *testing.T, sid, cwd string) sessionResult {
	t.Helper()
	return decodeResult(t, s.c.call("session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}))
}

func (s *server) setConfig(t *testing.T, sid, id, value string) sessionResult {
	t.Helper()
	return decodeResult(t, s.c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": id, "value": value}))
}

func (s *server) setMode(t *testing.T, sid, mode string) {
	t.Helper()
	require.JSONEq(t, `{}`, string(s.c.call("session/set_mode", map[string]any{"sessionId": sid, "modeId": mode})))
}

func promptParams(sid, text string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": text}}}
}

// prompt runs one prompt and returns its stop reason and the lines the agent
// wrote while it ran.
func (s *server) prompt(t *testing.T, sid, text string) (string, []string) {
	t.Helper()
	mark := s.c.mark()
	_, ch := s.c.request("session/prompt", promptParams(sid, text))
	f := s.c.await(ch, "session/prompt "+text)
	require.Empty(t, string(f.Error), "prompt %q failed", text)
	var r struct {
		StopReason string `json:"stopReason"`
	}
	require.NoError(t, json.Unmarshal(f.Result, &r))
	return r.StopReason, s.c.since(mark)
}

// ---------------------------------------------------------------------------
// Session logs.

// event is one line of a stored session log.
type event struct {
	Type string          `json:"type"`
	Seq  int             `json:"seq"`
	Data json.RawMessage `json:"data"`
}

// readLog reads a session's stored events from a jsonl store root.
func readLog(t *testing.T, root, sid string) []event {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "*", sid+".jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1, "log file of session %s", sid)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var out []event
	for i, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if i == 0 {
			continue // header
		}
		var e event
		require.NoError(t, json.Unmarshal([]byte(l), &e), l)
		out = append(out, e)
	}
	return out
}

// types lists event types, skipping assistant chunks.
func types(evs []event) []string {
	var out []string
	for _, e := range evs {
		// Chunks and the default composition's durable pending records
		// (knob/pending, checked where it matters) are left out.
		if e.Type != "assistant/chunk" && e.Type != agent.TypeKnobPending {
			out = append(out, e.Type)
		}
	}
	return out
}

// ofType returns the data of every event of typ.
func ofType(evs []event, typ string) []string {
	var out []string
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, string(e.Data))
		}
	}
	return out
}

// toolResult is a tool/result payload.
type toolResult struct {
	CallID  string `json:"callId"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool            `json:"isError"`
	Error   json.RawMessage `json:"error"`
}

func (r toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// toolResults decodes every tool/result of a log.
func toolResults(t *testing.T, evs []event) []toolResult {
	t.Helper()
	var out []toolResult
	for _, d := range ofType(evs, "tool/result") {
		var r toolResult
		require.NoError(t, json.Unmarshal([]byte(d), &r))
		out = append(out, r)
	}
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// roundtrip sends a request, waits for its response, and returns the
// response exactly as written, plus the lines written before it since the
// request was sent.
func (c *client) roundtrip(method string, params any) (string, []string) {
	c.t.Helper()
	mark := c.mark()
	id, ch := c.request(method, params)
	c.await(ch, method)
	prefix := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,`, id)
	lines := c.since(mark)
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) && !strings.Contains(l[:min(len(l), len(prefix)+12)], `"method"`) {
			return l, lines[:i]
		}
	}
	c.t.Fatalf("%s: response line %d not found", method, id)
	return "", nil
}
