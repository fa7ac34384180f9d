package reliability

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	agentBinary = filepath.Join(dir, "dsh-acp")
	build := exec.Command("go", "build", "-o", agentBinary, "./cmd/dsh-acp")
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building dsh-acp:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	return fmt.Sprintf("rpc error %d: %s %s", e.Code, e.Message, e.Data)
}

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

// agentProc is a dsh-acp subprocess driven like an editor drives it: it
// answers permission requests with "allow once" (or cancelled once the
// prompt is cancelled) and records every session/update per session, in
// wire order, together with the request in flight when it came.
type agentProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer
	done   chan struct{}

	wmu    sync.Mutex
	nextID atomic.Int64

	mu          sync.Mutex
	pending     map[int64]*pendingCall
	answered    map[int64]int // responses per request id
	sessions    map[string]*sessionTrace
	strays      []string // responses to no request, or repeated
	permissions int
	closed      bool
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	// Our own pipe, not StdoutPipe: Wait must not close it before every
	// line the agent wrote (before it exited or was killed) has been read.
	stdout, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = w
	a := &agentProc{t: t, cmd: cmd, stdin: stdin, stderr: &tailBuffer{max: 8 << 10}, done: make(chan struct{}),
		pending: map[int64]*pendingCall{}, answered: map[int64]int{}, sessions: map[string]*sessionTrace{}}
	cmd.Stderr = a.stderr
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Start()
	_ = w.Close()
	if err != nil {
		_ = stdout.Close()
		require.NoError(t, err)
	}
	go a.read(stdout)
	t.Cleanup(a.kill)
	_, err = a.call(context.Background(), "initialize", "", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{}})
	require.NoError(t, err, "initialize%s", a.stderr.hint())
	return a
}

// pid is the agent's process id.
func (a *agentProc) pid() int { return a.cmd.Process.Pid }

// send writes one JSON-RPC message.
func (a *agentProc) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	a.wmu.Lock()
	defer a.wmu.Unlock()
	_, err = a.stdin.Write(append(b, '\n'))
	return err
}

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
	case <-a.done:
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

// read dispatches the agent's stdout until it ends.
func (a *agentProc) read(stdout io.ReadCloser) {
	defer close(a.done)
	defer stdout.Close()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	for sc.Scan() {
		a.dispatch(sc.Bytes())
	}
}

// dispatch handles one line of the agent's stdout.
func (a *agentProc) dispatch(line []byte) {
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
		return
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
		go a.answer(m.ID, m.Method, m.Params)
	case len(m.ID) > 0:
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		a.mu.Lock()
		p := a.pending[id]
		a.answered[id]++
		if err != nil || p == nil {
			a.strays = append(a.strays, fmt.Sprintf("response to no pending request (id %s, seen %d times)", m.ID, a.answered[id]))
			a.mu.Unlock()
			return
		}
		delete(a.pending, id)
		if tr := a.sessions[p.session]; p.session != "" && tr != nil && tr.open == id {
			tr.open = 0
		}
		a.mu.Unlock()
		p.ch <- response{Result: m.Result, Err: m.Error}
	}
}

// answer serves an agent→client request like an editor would.
func (a *agentProc) answer(id json.RawMessage, method string, params json.RawMessage) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	switch method {
	case "session/request_permission":
		var p struct {
			SessionID string `json:"sessionId"`
			Options   []struct {
				OptionID string `json:"optionId"`
				Kind     string `json:"kind"`
			} `json:"options"`
		}
		_ = json.Unmarshal(params, &p)
		a.mu.Lock()
		a.permissions++
		cancelled := a.trace(p.SessionID).cancelled
		a.mu.Unlock()
		outcome := map[string]any{"outcome": "cancelled"}
		for _, o := range p.Options {
			if o.Kind == "allow_once" && !cancelled {
				outcome = map[string]any{"outcome": "selected", "optionId": o.OptionID}
			}
		}
		msg["result"] = map[string]any{"outcome": outcome}
	default:
		msg["error"] = rpcError{Code: -32601, Message: "method not found: " + method}
	}
	_ = a.send(msg)
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
	_ = syscall.Kill(a.pid(), syscall.SIGKILL)
	_ = a.cmd.Wait()
	_ = syscall.Kill(-a.pid(), syscall.SIGKILL)
	a.drain()
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
}

// close ends stdin, the way an editor quits, and waits for the agent to
// exit; it reports the exit error.
func (a *agentProc) close() error {
	_ = a.stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- a.cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(a.pid(), syscall.SIGKILL)
		err = fmt.Errorf("agent did not exit within 20 s of stdin closing: %w", <-exited)
	}
	_ = syscall.Kill(-a.pid(), syscall.SIGKILL)
	a.drain()
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	return err
}

// drain waits until stdout has been read to its end (every process that
// held it is gone), for at most 5 s.
func (a *agentProc) drain() {
	select {
	case <-a.done:
	case <-time.After(5 * time.Second):
		a.t.Errorf("agent stdout still open 5 s after the agent exited")
	}
}

// kill is the cleanup of an agent the test did not stop.
func (a *agentProc) kill() {
	a.mu.Lock()
	closed := a.closed
	a.mu.Unlock()
	if !closed {
		a.crash()
	}
}

// tailBuffer keeps the last max bytes written (the agent's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// hint is the tail of stderr for failure messages.
func (t *tailBuffer) hint() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	if len(s) > 1500 {
		s = "…" + s[len(s)-1500:]
	}
	return "\nagent stderr: " + s
}
