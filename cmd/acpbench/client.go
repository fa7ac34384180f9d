package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	"time"
)

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// reply is a response to one of our requests, stamped when its line was
// read.
type reply struct {
	result json.RawMessage
	err    *rpcError
	at     time.Time
}

// maxTimes is how many chunk arrival times a turn keeps.
const maxTimes = 256

// turn collects what streams during one prompt turn.
type turn struct {
	mu        sync.Mutex
	times     []time.Time   // arrivals of the first maxTimes chunks
	signal    chan struct{} // pinged (without blocking) on every chunk
	chunks    atomic.Int64  // agent_message_chunk + agent_thought_chunk
	updates   atomic.Int64  // every session/update
	cancelled atomic.Bool   // session/cancel was sent: permissions answer "cancelled"
}

func newTurn() *turn { return &turn{signal: make(chan struct{}, 1)} }

func (t *turn) chunk(at time.Time) {
	t.chunks.Add(1)
	t.mu.Lock()
	if len(t.times) < maxTimes {
		t.times = append(t.times, at)
	}
	t.mu.Unlock()
	select {
	case t.signal <- struct{}{}:
	default:
	}
}

// firstAfter is the arrival of the first chunk at or after since (zero if
// none): agents may stream their own notices before the model's reply.
func (t *turn) firstAfter(since time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, at := range t.times {
		if !at.Before(since) {
			return at
		}
	}
	return time.Time{}
}

// client is one spawned ACP agent, driven the way an editor would: it
// answers permission requests with an allow option and serves
// fs/read_text_file and fs/write_text_file from the disk (a missing file
// reads as empty, the way an editor opens a missing path as a new buffer).
type client struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	started time.Time
	stderr  *tail

	wmu    sync.Mutex
	nextID atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan reply
	readErr error

	cur         atomic.Pointer[turn]
	stdoutBytes atomic.Int64
	permissions atomic.Int64
	fsCalls     atomic.Int64
	done        chan struct{}
	closeOnce   sync.Once
	closeErr    error
	trace       io.WriteCloser  // copy of stdout, or nil
	initResult  json.RawMessage // the initialize result
}

// spawn starts argv in dir with env, in its own process group; trace,
// if not nil, receives a copy of its stdout.
func spawn(argv []string, dir string, env []string, trace io.WriteCloser) (*client, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A blocking pipe: the reader sleeps in read(2) instead of going
	// through the poller, one syscall per read instead of three.
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return nil, err
	}
	stdout, w := os.NewFile(uintptr(fds[0]), "stdout"), os.NewFile(uintptr(fds[1]), "stdout-w")
	cmd.Stdout = w
	c := &client{cmd: cmd, stdin: stdin, stderr: &tail{max: 16 << 10}, pending: map[int64]chan reply{},
		done: make(chan struct{}), trace: trace}
	cmd.Stderr = c.stderr
	cmd.WaitDelay = 2 * time.Second // a grandchild holding stderr must not block Wait
	c.cur.Store(newTurn())
	c.started = time.Now()
	err = cmd.Start()
	_ = w.Close()
	if err != nil {
		_ = stdout.Close()
		return nil, err
	}
	go c.read(stdout)
	return c, nil
}

// pid is the agent's process id.
func (c *client) pid() int { return c.cmd.Process.Pid }

// beginTurn installs fresh turn counters.
func (c *client) beginTurn() *turn {
	t := newTurn()
	c.cur.Store(t)
	return t
}

// send writes one JSON-RPC message.
func (c *client) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.stdin.Write(append(b, '\n'))
	return err
}

// start sends a request and returns when it was written and the channel
// its reply arrives on.
func (c *client) start(method string, params any) (time.Time, <-chan reply, error) {
	id := c.nextID.Add(1)
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return time.Time{}, nil, err
	}
	c.pending[id] = ch
	c.mu.Unlock()
	sent := time.Now()
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return sent, nil, fmt.Errorf("%s: %w", method, err)
	}
	return sent, ch, nil
}

// wait waits for a reply until ctx is done or the agent's stdout ends.
func (c *client) wait(ctx context.Context, method string, ch <-chan reply) (reply, error) {
	select {
	case r := <-ch:
		if r.err != nil {
			return r, fmt.Errorf("%s: %w", method, r.err)
		}
		return r, nil
	case <-ctx.Done():
		return reply{}, fmt.Errorf("%s: %w", method, ctx.Err())
	case <-c.done:
		select { // the reply may have been the last line
		case r := <-ch:
			if r.err != nil {
				return r, fmt.Errorf("%s: %w", method, r.err)
			}
			return r, nil
		default:
		}
		return reply{}, fmt.Errorf("%s: agent closed stdout (%v)", method, c.readErr)
	}
}

// call sends a request and waits for its reply; it returns the send time.
func (c *client) call(ctx context.Context, method string, params any) (time.Time, reply, error) {
	sent, ch, err := c.start(method, params)
	if err != nil {
		return sent, reply{}, err
	}
	r, err := c.wait(ctx, method, ch)
	return sent, r, err
}

// notify sends a notification.
func (c *client) notify(method string, params any) error {
	return c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// Markers of the fast path for session/update notifications.
var (
	updateMethod = []byte(`"method":"session/update"`)
	msgChunk     = []byte(`"sessionUpdate":"agent_message_chunk"`)
	thoughtChunk = []byte(`"sessionUpdate":"agent_thought_chunk"`)
)

// read dispatches the agent's stdout until it ends.
func (c *client) read(stdout io.ReadCloser) {
	defer stdout.Close()
	if c.trace != nil {
		defer c.trace.Close()
	}
	r := bufio.NewReaderSize(stdout, 1<<20)
	var long []byte
	var err error
	for {
		var line []byte
		line, err = r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		c.stdoutBytes.Add(int64(len(line)))
		if c.trace != nil {
			_, _ = c.trace.Write(line)
		}
		if err != nil {
			break
		}
		c.dispatch(bytes.TrimSpace(line), time.Now())
	}
	if errors.Is(err, io.EOF) {
		err = io.EOF
	}
	c.mu.Lock()
	c.readErr = err
	c.mu.Unlock()
	close(c.done)
}

// dispatch handles one line read at `at`.
func (c *client) dispatch(line []byte, at time.Time) {
	if len(line) == 0 {
		return
	}
	// Fast path: streamed updates are counted without decoding.
	if head := line[:min(len(line), 64)]; bytes.Contains(head, updateMethod) {
		t := c.cur.Load()
		t.updates.Add(1)
		if bytes.Contains(line, msgChunk) || bytes.Contains(line, thoughtChunk) {
			t.chunk(at)
			return
		}
		if !bytes.Contains(line, []byte(`"sessionUpdate":"`)) {
			c.slowUpdate(line, at, t)
		}
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil {
		return // not JSON-RPC (stray output); counted in stdout bytes only
	}
	switch {
	case m.Method != "" && len(m.ID) > 0:
		go c.answer(m.ID, m.Method, m.Params)
	case m.Method == "session/update":
		t := c.cur.Load()
		t.updates.Add(1)
		c.slowUpdate(line, at, t)
	case m.Method == "" && len(m.ID) > 0:
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			return
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- reply{result: m.Result, err: m.Error, at: at}
		}
	}
}

// slowUpdate decodes an update the fast path could not classify.
func (c *client) slowUpdate(line []byte, at time.Time, t *turn) {
	var n struct {
		Params struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
			} `json:"update"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &n) == nil {
		switch n.Params.Update.SessionUpdate {
		case "agent_message_chunk", "agent_thought_chunk":
			t.chunk(at)
		}
	}
}

// answer serves an agent→client request like an editor would.
func (c *client) answer(id json.RawMessage, method string, params json.RawMessage) {
	result, rerr := c.serve(method, params)
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		msg["error"] = rerr
	} else {
		msg["result"] = result
	}
	_ = c.send(msg)
}

func (c *client) serve(method string, params json.RawMessage) (any, *rpcError) {
	switch method {
	case "session/request_permission":
		c.permissions.Add(1)
		var p struct {
			Options []struct {
				OptionID string `json:"optionId"`
				Kind     string `json:"kind"`
			} `json:"options"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &rpcError{Code: -32602, Message: err.Error()}
		}
		if c.cur.Load().cancelled.Load() || len(p.Options) == 0 {
			return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
		}
		pick := p.Options[0].OptionID
		for _, kind := range []string{"allow_always", "allow_once"} {
			for _, o := range p.Options {
				if o.Kind == kind {
					pick = o.OptionID
				}
			}
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": pick}}, nil
	case "fs/read_text_file":
		c.fsCalls.Add(1)
		var p struct {
			Path  string `json:"path"`
			Line  *int   `json:"line"`
			Limit *int   `json:"limit"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &rpcError{Code: -32602, Message: err.Error()}
		}
		b, err := os.ReadFile(p.Path)
		if errors.Is(err, os.ErrNotExist) {
			// As Zed answers for a path with no file and no buffer (the
			// agent takes it for a new file).
			data, _ := json.Marshal(map[string]string{"uri": p.Path})
			return nil, &rpcError{Code: -32002, Message: "Resource not found", Data: data}
		}
		if err != nil {
			return nil, &rpcError{Code: -32603, Message: err.Error()}
		}
		return map[string]any{"content": sliceLines(string(b), p.Line, p.Limit)}, nil
	case "fs/write_text_file":
		c.fsCalls.Add(1)
		var p struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &rpcError{Code: -32602, Message: err.Error()}
		}
		if err := os.MkdirAll(filepath.Dir(p.Path), 0o755); err != nil {
			return nil, &rpcError{Code: -32603, Message: err.Error()}
		}
		if err := os.WriteFile(p.Path, []byte(p.Content), 0o644); err != nil {
			return nil, &rpcError{Code: -32603, Message: err.Error()}
		}
		return map[string]any{}, nil
	}
	return nil, &rpcError{Code: -32601, Message: "method not found: " + method}
}

// sliceLines applies fs/read_text_file's 1-based line and limit.
func sliceLines(s string, line, limit *int) string {
	if line == nil && limit == nil {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	from := 0
	if line != nil && *line > 1 {
		from = min(*line-1, len(lines))
	}
	to := len(lines)
	if limit != nil && from+*limit < to {
		to = from + *limit
	}
	return strings.Join(lines[from:to], "")
}

// close ends stdin and waits up to grace for the agent to close its
// stdout, then terminates (and after 2 s kills) its process group;
// stragglers of the group are always killed.
func (c *client) close(grace time.Duration) error {
	c.closeOnce.Do(func() { c.closeErr = c.doClose(grace) })
	return c.closeErr
}

func (c *client) doClose(grace time.Duration) error {
	_ = c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = syscall.Kill(-c.pid(), syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(2 * time.Second):
		}
	}
	_ = syscall.Kill(-c.pid(), syscall.SIGKILL) // leftover children of the group
	err := c.cmd.Wait()
	select { // a process outside the group may still hold stdout open
	case <-c.done:
	case <-time.After(2 * time.Second):
	}
	return err
}

// tail keeps the last max bytes written (the agent's stderr).
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// hint is the last stderr lines, for error messages.
func (t *tail) hint() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return "; stderr: " + s
}
