package reliability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/acpschema"
	"github.com/dsh-acp/dsh-acp/internal/testbin"
	"github.com/dsh-acp/dsh-acp/internal/workertest"
)

// agentBinary is the dsh-acp binary TestMain builds (or
// $RELIABILITY_AGENT).
var agentBinary string

func TestMain(m *testing.M) {
	if bin := os.Getenv("RELIABILITY_AGENT"); bin != "" {
		// A prebuilt binary, to judge a build other than this tree's.
		agentBinary = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "dsh-acp-reliability-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	agentBinary, err = testbin.Build(dir, testbin.Agent, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	// The program worker beside it, where the agent looks for it, with
	// the test-only escape hook.
	if _, err := workertest.Build(dir, "workerescape"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// rpcError is a JSON-RPC error object.
type rpcError = acpclient.Error

// response is the answer to one of our requests.
type response struct {
	Result json.RawMessage
	Err    *rpcError
}

// update is one session/update as the client saw it.
type update struct {
	Kind       string // sessionUpdate
	ToolCallID string
	Status     string
	Text       string // content text of chunks
	// Request is the id of the session's prompt or load in flight when it
	// arrived, 0 when none was.
	Request int64
}

// sessionTrace is what one session streamed.
type sessionTrace struct {
	open      int64 // the prompt or load in flight, 0 if none
	cancelled bool  // its prompt was cancelled: permissions answer cancelled
	updates   []update
}

// pendingCall is a request waiting for its response.
type pendingCall struct {
	method  string
	session string
	ch      chan response
}

// agentProc is a dsh-acp subprocess driven like an editor drives it,
// through an acpclient.Process: it answers permission requests with
// "allow once" (or cancelled once the prompt is cancelled) and records
// every session/update per session, in wire order, together with the
// request in flight when it came (dispatch, on the client's read loop).
// Every frame the agent wrote is validated when the test ends.
type agentProc struct {
	t      testing.TB
	p      *acpclient.Process
	stderr stderrTail

	nextID atomic.Int64

	mu          sync.Mutex
	pending     map[int64]*pendingCall
	answered    map[int64]int // responses per request id
	sessions    map[string]*sessionTrace
	strays      []string // responses to no request, or repeated
	permissions int
	closed      bool
	crashed     bool
}

// agentConfig says how to start an agent.
type agentConfig struct {
	root   string // --sessions-root
	store  string // "jsonl" or "sqlite"
	model  *model
	dir    string // the process's working directory
	config string // the config file written for it (derived when empty)
}

// startAgent starts dsh-acp with the default composition and initializes
// the connection.
func startAgent(t testing.TB, cfg agentConfig) *agentProc {
	t.Helper()
	home := filepath.Join(cfg.root, "..", "home")
	require.NoError(t, os.MkdirAll(home, 0o700))
	if cfg.config == "" {
		cfg.config = filepath.Join(home, "config.json")
		b, err := json.Marshal(map[string]string{"store": cfg.store})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cfg.config, b, 0o600))
	}
	cmd := exec.Command(agentBinary, "--composition", "default", "--sessions-root", cfg.root, "--config", cfg.config)
	cmd.Dir = cfg.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"DEEPSEEK_API_KEY=test-key", "DEEPSEEK_BASE_URL=" + cfg.model.URL(), "DSH_ACP_LOG=warn"}
	a := &agentProc{t: t, pending: map[int64]*pendingCall{}, answered: map[int64]int{}, sessions: map[string]*sessionTrace{}}
	schema, err := acpschema.Stable()
	require.NoError(t, err)
	a.p, err = acpclient.Spawn(cmd, acpclient.Options{
		Schema:    schema,
		OnReceive: func(line []byte, _ time.Time) bool { return a.dispatch(line) },
		Handlers:  map[string]acpclient.Handler{"session/request_permission": acpclient.Permissions(a.permission)},
	})
	require.NoError(t, err)
	a.stderr.p = a.p
	t.Cleanup(a.kill)
	_, err = a.call(context.Background(), "initialize", "", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{}})
	require.NoError(t, err, "initialize%s", a.stderr.hint())
	return a
}

// pid is the agent's process id.
func (a *agentProc) pid() int { return a.p.Pid() }

// send writes one JSON-RPC message.
func (a *agentProc) send(msg any) error { return a.p.Send(msg) }

// start sends a request. A session/prompt or session/load names its
// session: the updates of that session are attributed to it until its
// response arrives.
func (a *agentProc) start(method, sessionID string, params any) (int64, <-chan response, error) {
	id := a.nextID.Add(1)
	ch := make(chan response, 1)
	a.mu.Lock()
	a.pending[id] = &pendingCall{method: method, session: sessionID, ch: ch}
	if sessionID != "" {
		tr := a.trace(sessionID)
		tr.open, tr.cancelled = id, false
	}
	a.mu.Unlock()
	if err := a.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return id, nil, fmt.Errorf("%s: %w", method, err)
	}
	return id, ch, nil
}

// wait waits for a response, the agent's exit, or ctx.
func (a *agentProc) wait(ctx context.Context, method string, ch <-chan response) (json.RawMessage, error) {
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, fmt.Errorf("%s: %w", method, r.Err)
		}
		return r.Result, nil
	case <-a.p.Done():
		select {
		case r := <-ch:
			if r.Err != nil {
				return nil, fmt.Errorf("%s: %w", method, r.Err)
			}
			return r.Result, nil
		default:
		}
		return nil, fmt.Errorf("%s: agent closed stdout%s", method, a.stderr.hint())
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w%s", method, ctx.Err(), a.stderr.hint())
	}
}

// call sends a request and waits for its result, for at most 30 s.
func (a *agentProc) call(ctx context.Context, method, sessionID string, params any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, ch, err := a.start(method, sessionID, params)
	if err != nil {
		return nil, err
	}
	return a.wait(ctx, method, ch)
}

// newSession opens a session in cwd and returns its id.
func (a *agentProc) newSession(cwd string) string {
	a.t.Helper()
	res, err := a.call(context.Background(), "session/new", "", map[string]any{"cwd": cwd, "mcpServers": []any{}})
	require.NoError(a.t, err)
	var r struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(a.t, json.Unmarshal(res, &r))
	require.NotEmpty(a.t, r.SessionID)
	return r.SessionID
}

// load loads a stored session; it returns the load's error.
func (a *agentProc) load(id, cwd string) error {
	_, err := a.call(context.Background(), "session/load", id, map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}})
	return err
}

// prompt sends a text prompt and returns the channel of its response.
func (a *agentProc) prompt(sessionID, text string) (int64, <-chan response, error) {
	return a.start("session/prompt", sessionID, map[string]any{"sessionId": sessionID,
		"prompt": []any{map[string]any{"type": "text", "text": text}}})
}

// stopReason waits for a prompt's response and returns its stop reason.
func (a *agentProc) stopReason(ctx context.Context, ch <-chan response) (string, error) {
	res, err := a.wait(ctx, "session/prompt", ch)
	if err != nil {
		return "", err
	}
	return parseStop(res)
}

// parseStop reads the stop reason of a prompt's result.
func parseStop(res json.RawMessage) (string, error) {
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", err
	}
	return r.StopReason, nil
}

// cancel sends session/cancel for a session.
func (a *agentProc) cancel(sessionID string) error {
	a.mu.Lock()
	a.trace(sessionID).cancelled = true
	a.mu.Unlock()
	return a.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sessionID}})
}

// trace returns the session's trace, creating it; a.mu is held.
func (a *agentProc) trace(id string) *sessionTrace {
	tr := a.sessions[id]
	if tr == nil {
		tr = &sessionTrace{}
		a.sessions[id] = tr
	}
	return tr
}

// updates returns a copy of what a session streamed so far.
func (a *agentProc) updates(sessionID string) []update {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]update(nil), a.trace(sessionID).updates...)
}

// dispatch attributes one line of the agent's stdout: updates to their
// session's trace, responses to their pending request. It leaves agent
// requests to the client (false).
func (a *agentProc) dispatch(line []byte) (handled bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil {
		a.mu.Lock()
		a.strays = append(a.strays, "not JSON-RPC: "+string(line))
		a.mu.Unlock()
		return true
	}
	switch {
	case m.Method == "session/update":
		var p struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				SessionUpdate string `json:"sessionUpdate"`
				ToolCallID    string `json:"toolCallId"`
				Status        string `json:"status"`
				Content       struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		}
		_ = json.Unmarshal(m.Params, &p)
		a.mu.Lock()
		tr := a.trace(p.SessionID)
		tr.updates = append(tr.updates, update{Kind: p.Update.SessionUpdate, ToolCallID: p.Update.ToolCallID,
			Status: p.Update.Status, Text: p.Update.Content.Text, Request: tr.open})
		a.mu.Unlock()
	case m.Method != "" && len(m.ID) > 0:
		return false
	case len(m.ID) > 0:
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		a.mu.Lock()
		p := a.pending[id]
		a.answered[id]++
		if err != nil || p == nil {
			a.strays = append(a.strays, fmt.Sprintf("response to no pending request (id %s, seen %d times)", m.ID, a.answered[id]))
			a.mu.Unlock()
			return true
		}
		delete(a.pending, id)
		if tr := a.sessions[p.session]; p.session != "" && tr != nil && tr.open == id {
			tr.open = 0
		}
		a.mu.Unlock()
		p.ch <- response{Result: m.Result, Err: m.Error}
	}
	return true
}

// permission answers a permission request like an editor user would:
// allow once, or cancelled once the session's prompt was cancelled.
func (a *agentProc) permission(p acpclient.PermissionRequest) string {
	a.mu.Lock()
	a.permissions++
	cancelled := a.trace(p.SessionID).cancelled
	a.mu.Unlock()
	if cancelled {
		return ""
	}
	return p.Option("allow_once")
}

// strayResponses returns responses that matched no pending request.
func (a *agentProc) strayResponses() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.strays...)
}

// memory reads VmRSS and VmHWM of the agent, in kB.
func (a *agentProc) memory() (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.pid()))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm, nil
}

// crash kills the agent with SIGKILL, like a crash would, then kills what
// is left of its process group (commands it was running).
func (a *agentProc) crash() {
	if err := a.p.Kill(); err != nil {
		a.t.Errorf("%v", err)
	}
	a.mu.Lock()
	a.closed, a.crashed = true, true
	a.mu.Unlock()
}

// close ends stdin, the way an editor quits, and waits for the agent to
// exit; it reports the exit error.
func (a *agentProc) close() error {
	err := a.p.Close(20 * time.Second)
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	return err
}

// kill is the cleanup of an agent: it crashes one the test did not stop,
// then validates every frame the agent wrote (the last line of a crashed
// agent may be cut).
func (a *agentProc) kill() {
	a.mu.Lock()
	closed := a.closed
	a.mu.Unlock()
	if !closed {
		a.crash()
	}
	a.mu.Lock()
	crashed := a.crashed
	a.mu.Unlock()
	last := a.p.Len() - 1
	for _, err := range a.p.Check() {
		var fe *acpclient.FrameError
		if crashed && errors.As(err, &fe) && fe.Index == last {
			continue // the kill may have cut the last line
		}
		a.t.Errorf("%v", err)
	}
}

// stderrTail is the tail of the agent's stderr.
type stderrTail struct{ p *acpclient.Process }

// hint is the tail of stderr for failure messages.
func (t stderrTail) hint() string {
	if t.p == nil {
		return ""
	}
	s := t.p.Stderr()
	if s == "" {
		return ""
	}
	if len(s) > 1500 {
		s = "…" + s[len(s)-1500:]
	}
	return "\nagent stderr: " + s
}
