package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
)

// reply is a response to one of our requests, stamped when its line was
// read.
type reply struct {
	result json.RawMessage
	err    *acpclient.Error
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

// client is one spawned ACP agent on the shared acpclient, driven the
// way an editor would: it answers permission requests with an allow
// option and serves fs/read_text_file and fs/write_text_file over the
// workspace, as Zed does (a missing file is "Resource not found"). It
// keeps no transcript: session/update lines are counted on a fast path
// without decoding, responses are stamped with the time their line was
// read.
type client struct {
	proc    *acpclient.Process
	started time.Time
	done    <-chan struct{} // the agent's stdout ended

	mu     sync.Mutex
	stamps map[string]time.Time // raw response id → when its line was read

	cur         atomic.Pointer[turn]
	stdoutBytes atomic.Int64
	permissions atomic.Int64
	trace       io.WriteCloser  // copy of stdout, or nil
	initResult  json.RawMessage // the initialize result
}

// spawn starts argv in dir (its workspace, which its fs/* requests may
// reach) with env, in its own process group; trace, if not nil, receives
// a copy of its stdout.
func spawn(argv []string, dir string, env []string, trace io.WriteCloser) (*client, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	c := &client{stamps: map[string]time.Time{}, trace: trace}
	c.cur.Store(newTurn())
	opts := acpclient.Options{
		Handlers:     map[string]acpclient.Handler{"session/request_permission": acpclient.Permissions(c.choose)},
		FS:           acpclient.NewFS(dir),
		NoTranscript: true,
		OnReceive:    c.receive,
	}
	c.started = time.Now()
	p, err := acpclient.Spawn(cmd, opts)
	if err != nil {
		if trace != nil {
			_ = trace.Close()
		}
		return nil, err
	}
	c.proc, c.done = p, p.Done()
	if trace != nil {
		go func() {
			<-p.Done()
			_ = trace.Close()
		}()
	}
	return c, nil
}

// choose picks an allow option (cancelled once the turn was cancelled).
func (c *client) choose(p acpclient.PermissionRequest) string {
	c.permissions.Add(1)
	if c.cur.Load().cancelled.Load() || len(p.Options) == 0 {
		return ""
	}
	for _, kind := range []string{"allow_once", "allow_always"} {
		if id := p.Option(kind); id != "" {
			return id
		}
	}
	return p.Options[0].OptionID
}

// pid is the agent's process id.
func (c *client) pid() int { return c.proc.Pid() }

// beginTurn installs fresh turn counters.
func (c *client) beginTurn() *turn {
	t := newTurn()
	c.cur.Store(t)
	return t
}

// Markers of the fast path for session/update notifications.
var (
	updateMethod = []byte(`"method":"session/update"`)
	msgChunk     = []byte(`"sessionUpdate":"agent_message_chunk"`)
	thoughtChunk = []byte(`"sessionUpdate":"agent_thought_chunk"`)
)

// receive sees every line the agent writes, on the read loop, before the
// connection handles it: it counts bytes, copies the trace, counts
// session/update lines (handled here, without decoding where it can)
// and stamps responses.
func (c *client) receive(line []byte, at time.Time) bool {
	c.stdoutBytes.Add(int64(len(line)) + 1)
	if c.trace != nil {
		_, _ = c.trace.Write(line)
		_, _ = c.trace.Write([]byte{'\n'})
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return true
	}
	if head := line[:min(len(line), 64)]; bytes.Contains(head, updateMethod) {
		t := c.cur.Load()
		t.updates.Add(1)
		if bytes.Contains(line, msgChunk) || bytes.Contains(line, thoughtChunk) {
			t.chunk(at)
			return true
		}
		if !bytes.Contains(line, []byte(`"sessionUpdate":"`)) {
			c.slowUpdate(line, at, t)
		}
		return true
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil {
		return true // not JSON-RPC (stray output); counted in stdout bytes only
	}
	switch {
	case m.Method == "session/update":
		t := c.cur.Load()
		t.updates.Add(1)
		c.slowUpdate(line, at, t)
		return true
	case m.Method == "" && len(m.ID) > 0:
		c.mu.Lock()
		c.stamps[string(m.ID)] = at
		c.mu.Unlock()
	}
	return false
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

// start sends a request and returns when it was written and the call to
// wait for.
func (c *client) start(method string, params any) (time.Time, *acpclient.Call, error) {
	sent := time.Now()
	k, err := c.proc.Start(method, params)
	if err != nil {
		return sent, nil, fmt.Errorf("%s: %w", method, err)
	}
	return sent, k, nil
}

// wait waits for a reply until ctx is done or the agent's stdout ends.
func (c *client) wait(ctx context.Context, method string, k *acpclient.Call) (reply, error) {
	f, err := k.Wait(ctx)
	if err != nil {
		return reply{}, err
	}
	c.mu.Lock()
	at := c.stamps[string(f.ID)]
	delete(c.stamps, string(f.ID))
	c.mu.Unlock()
	r := reply{result: f.Result, err: f.Error, at: at}
	if r.err != nil {
		return r, fmt.Errorf("%s: %w", method, r.err)
	}
	return r, nil
}

// call sends a request and waits for its reply; it returns the send time.
func (c *client) call(ctx context.Context, method string, params any) (time.Time, reply, error) {
	sent, k, err := c.start(method, params)
	if err != nil {
		return sent, reply{}, err
	}
	r, err := c.wait(ctx, method, k)
	return sent, r, err
}

// notify sends a notification.
func (c *client) notify(method string, params any) error {
	return c.proc.Notify(method, params)
}

// close ends stdin and waits up to grace for the agent to exit, then
// terminates (and after 2 s kills) its process group; stragglers of the
// group are always killed.
func (c *client) close(grace time.Duration) error { return c.proc.Close(grace) }

// stderrHint is the end of the agent's stderr, for error messages.
func (c *client) stderrHint() string {
	s := c.proc.Stderr()
	if s == "" {
		return ""
	}
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return "; stderr: " + s
}
