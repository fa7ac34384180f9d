package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/proctree"
	"github.com/dsh-acp/dsh-acp/session"
)

// DefaultConnectTimeout bounds a server's start, handshake and tool
// listing when Config.ConnectTimeout is zero.
const DefaultConnectTimeout = 30 * time.Second

// Approver asks the user to approve a call (approval.Service, which
// applies the session's approval policy and logs the question and answer).
type Approver interface {
	Request(ctx context.Context, log *session.Log, req approval.Request) (approval.Outcome, error)
}

// Config is what a session's servers share.
type Config struct {
	// Approver asks before a server's first call (nil: calls run unasked).
	Approver Approver
	// Notify shows the user a notice (a server failed, crashed or timed
	// out). It is called from background goroutines.
	Notify func(text string)
	// ConnectTimeout bounds start, handshake and tool listing (zero:
	// DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// Environ is the base environment of stdio servers, to which each
	// server's own variables are added.
	Environ []string
	// Dir is the working directory of stdio servers (the session root).
	Dir string
	// HTTPClient reaches http and sse servers (nil: http.DefaultClient).
	HTTPClient *http.Client
	// Version is the client version announced to servers.
	Version string
	// Log receives diagnostics.
	Log zerolog.Logger
}

// State is where a server's connection stands.
type State string

// States.
const (
	Connecting State = "connecting"
	Ready      State = "ready"
	Failed     State = "failed"
	Closed     State = "closed"
)

// Status is one server's state, for diagnostics and tests.
type Status struct {
	Name  string
	State State
	Tools []string
	Err   string
}

// Set is one session's MCP servers. It is a capabilities.ToolSource (attach
// it to the session's registry) and a capabilities.Closer: closing it
// stops every server.
type Set struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	conns  []*conn
	wg     sync.WaitGroup // connect and watch goroutines
	ready  sync.WaitGroup // one per server until it is ready or failed
}

var (
	_ capabilities.ToolSource = (*Set)(nil)
	_ capabilities.Closer     = (*Set)(nil)
)

// Start begins connecting to servers in the background and returns at
// once.
func Start(cfg Config, servers []Server) *Set {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.Notify == nil {
		cfg.Notify = func(string) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Set{cfg: cfg, ctx: ctx, cancel: cancel}
	for _, srv := range servers {
		c := &conn{set: s, srv: srv, state: Connecting}
		s.conns = append(s.conns, c)
		s.ready.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.connect()
		}()
	}
	return s
}

// Wait blocks until every server is ready or has failed, or ctx ends.
func (s *Set) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.ready.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Tools implements capabilities.ToolSource: the tools of every ready
// server, by name.
func (s *Set) Tools() []capabilities.Tool {
	var out []capabilities.Tool
	for _, c := range s.conns {
		c.mu.Lock()
		if c.state == Ready {
			out = append(out, c.tools...)
		}
		c.mu.Unlock()
	}
	return out
}

// Statuses reports every server's state, in configuration order.
func (s *Set) Statuses() []Status {
	out := make([]Status, 0, len(s.conns))
	for _, c := range s.conns {
		c.mu.Lock()
		st := Status{Name: c.srv.Name, State: c.state, Err: c.err}
		if c.state == Ready {
			for _, t := range c.tools {
				st.Tools = append(st.Tools, t.Name())
			}
		}
		c.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// Close stops every server (a stdio server's process group is killed if
// it does not exit when its input closes) and waits for the connection
// goroutines. It implements capabilities.Closer.
func (s *Set) Close(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, c := range s.conns {
		c.mu.Lock()
		cs := c.cs
		c.state, c.tools = Closed, nil
		c.mu.Unlock()
		if cs != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = cs.Close()
			}()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(3 * time.Second):
	}
	s.cancel()
	s.wg.Wait()
	return nil
}

// conn is one server's connection.
type conn struct {
	set *Set
	srv Server

	mu     sync.Mutex
	state  State
	err    string
	cs     *sdk.ClientSession
	tools  []capabilities.Tool
	stderr *tailBuffer

	askMu  sync.Mutex // one approval question per server at a time
	always bool       // "always allow" was answered (guarded by askMu)
}

// connect starts or reaches the server, lists its tools and watches the
// connection until it ends.
func (c *conn) connect() {
	s := c.set
	// The connection lives on ctx (an SSE stream is bound to the context
	// it was opened with); the timeout only cuts a connect that is slow.
	ctx, cancel := context.WithCancelCause(s.ctx)
	defer cancel(nil)
	slow := errors.New("connect timeout")
	timer := time.AfterFunc(s.cfg.ConnectTimeout, func() { cancel(slow) })
	cs, tools, err := c.dial(ctx)
	if !timer.Stop() && err == nil {
		err = slow
	}
	if err != nil {
		switch {
		case s.ctx.Err() != nil: // closed while connecting
		case errors.Is(context.Cause(ctx), slow):
			c.fail(fmt.Sprintf("did not answer within %s", s.cfg.ConnectTimeout), "could not be used")
		default:
			c.fail(err.Error(), "could not be started")
		}
		if cs != nil {
			_ = cs.Close()
		}
		s.ready.Done()
		return
	}
	c.mu.Lock()
	if c.state == Closed {
		c.mu.Unlock()
		_ = cs.Close()
		s.ready.Done()
		return
	}
	c.cs, c.tools, c.state = cs, tools, Ready
	c.mu.Unlock()
	s.ready.Done()
	s.cfg.Log.Debug().Str("mcp", c.srv.Name).Int("tools", len(tools)).Msg("MCP server connected")
	werr := cs.Wait()
	c.mu.Lock()
	closed := c.state == Closed
	c.mu.Unlock()
	if !closed && s.ctx.Err() == nil {
		why := "its connection closed"
		if werr != nil && !errors.Is(werr, context.Canceled) {
			why = werr.Error()
		}
		c.fail(why, "stopped")
	}
}

// dial connects and lists the server's tools.
func (c *conn) dial(ctx context.Context) (*sdk.ClientSession, []capabilities.Tool, error) {
	t, err := c.transport()
	if err != nil {
		return nil, nil, err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "dsh-acp", Version: c.set.cfg.Version}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			// The connection's goroutine holds s.wg while it is open.
			c.set.wg.Add(1)
			go func() {
				defer c.set.wg.Done()
				c.refresh()
			}()
		},
	})
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, err
	}
	tools, err := c.list(ctx, cs)
	return cs, tools, err
}

// refresh lists the tools again after the server said they changed.
func (c *conn) refresh() {
	cs := c.session()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.set.ctx, c.set.cfg.ConnectTimeout)
	defer cancel()
	tools, err := c.list(ctx, cs)
	if err != nil {
		c.set.cfg.Log.Warn().Err(err).Str("mcp", c.srv.Name).Msg("MCP tools not refreshed")
		return
	}
	c.mu.Lock()
	if c.state == Ready && c.cs == cs {
		c.tools = tools
	}
	c.mu.Unlock()
}

// list lists the server's tools, in name order.
func (c *conn) list(ctx context.Context, cs *sdk.ClientSession) ([]capabilities.Tool, error) {
	var tools []capabilities.Tool
	for mt, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		tl, err := newTool(c, mt)
		if err != nil {
			c.set.cfg.Log.Warn().Err(err).Str("mcp", c.srv.Name).Str("tool", mt.Name).Msg("MCP tool left out")
			continue
		}
		tools = append(tools, tl)
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name() < tools[j].Name() })
	return tools, nil
}

// transport builds the server's transport.
func (c *conn) transport() (sdk.Transport, error) {
	s := c.set
	hc := s.cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	if len(c.srv.Headers) > 0 {
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		cp := *hc
		cp.Transport = headerTransport{base: base, headers: c.srv.Headers}
		hc = &cp
	}
	switch c.srv.Transport {
	case HTTP:
		return &sdk.StreamableClientTransport{Endpoint: c.srv.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil
	case SSE:
		return &sdk.SSEClientTransport{Endpoint: c.srv.URL, HTTPClient: hc}, nil
	case Stdio:
		cmd := exec.CommandContext(s.ctx, c.srv.Command, c.srv.Args...)
		cmd.Dir = s.cfg.Dir
		cmd.Env = append([]string(nil), s.cfg.Environ...)
		for _, e := range c.srv.Env {
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
		c.stderr = &tailBuffer{max: 2048}
		cmd.Stderr = c.stderr
		proctree.Prepare(cmd)
		cmd.Cancel = func() error { return proctree.KillTree(cmd.Process.Pid) }
		cmd.WaitDelay = 2 * time.Second
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil
	}
	return nil, fmt.Errorf("unsupported transport %q", c.srv.Transport)
}

// fail marks the server failed, drops its tools and tells the user.
func (c *conn) fail(why, what string) {
	c.mu.Lock()
	if c.state == Closed || c.state == Failed {
		c.mu.Unlock()
		return
	}
	wasReady := c.state == Ready
	c.state, c.err, c.tools = Failed, why, nil
	cs := c.cs
	c.cs = nil
	c.mu.Unlock()
	if cs != nil {
		go func() { _ = cs.Close() }()
	}
	text := fmt.Sprintf("The MCP server %q %s: %s.", c.srv.Name, what, strings.TrimSuffix(why, "."))
	if c.stderr != nil {
		if tail := strings.TrimSpace(c.stderr.String()); tail != "" {
			text += "\nIts last output on stderr:\n" + tail
		}
	}
	if wasReady {
		text += "\nIts tools are gone for the rest of this session."
	} else {
		text += "\nThe session goes on without its tools."
	}
	c.set.cfg.Log.Warn().Str("mcp", c.srv.Name).Str("why", why).Msg("MCP server unavailable")
	c.set.cfg.Notify(text + "\n\n")
}

// session returns the live client session (nil when not connected).
func (c *conn) session() *sdk.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != Ready {
		return nil
	}
	return c.cs
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers []Pair
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for _, p := range h.headers {
		r.Header.Set(p.Name, p.Value)
	}
	return h.base.RoundTrip(r)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// Settle implements capabilities.Settler: it waits until every server is
// ready or has failed, or ctx ends.
func (s *Set) Settle(ctx context.Context) { _ = s.Wait(ctx) }
