// Package acpclient is a scripted ACP client: the editor side of the Agent
// Client Protocol, for tests, the --replay harness and benchmarks.
//
// A Conn speaks newline-delimited JSON-RPC with one agent, over an
// in-process pipe pair (Serve, New) or a spawned process (Spawn). It sends
// requests (typed params, or raw lines for byte-exact scripts) and awaits
// their responses by id, keeps the raw transcript of every line both ways,
// collects session/update notifications in wire order with waiting helpers,
// and answers the agent's own requests through pluggable handlers: a
// permission policy, elicitation answers, a filesystem over a directory with
// an unsaved-buffer overlay (FS) and terminals that really run their command
// (Terminals), the way Zed hosts an agent. Check validates every frame the
// agent wrote against the ACP schema and the envelope rules.
//
// The zero Options answer every agent request "method not found" and
// advertise no client capabilities.
package acpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// Options configure a Conn.
type Options struct {
	// Handlers answer agent→client requests by method; they take
	// precedence over FS, Terminals and Fallback.
	Handlers map[string]Handler
	// FS, when set, serves fs/read_text_file and fs/write_text_file and is
	// advertised as fs.readTextFile and fs.writeTextFile.
	FS *FS
	// Terminals, when set, serves terminal/* and is advertised as terminal.
	Terminals *Terminals
	// Fallback answers the requests no other handler takes; nil answers
	// "method not found".
	Fallback Handler
	// ClientCapabilities, when not nil, is sent by Initialize exactly as
	// given instead of the capabilities derived from FS and Terminals.
	ClientCapabilities any

	// Schema validates the agent's frames in Check; nil checks only the
	// line framing. Unstable, when set, validates the frames that carry
	// an update kind only the unstable schema knows (subagent_update).
	Schema, Unstable FrameChecker

	// OnReceive, when set, sees every line the agent writes (without its
	// "\n"), on the read loop, in wire order, before the Conn handles it;
	// returning true tells the Conn to do nothing more with the line
	// (it stays in the transcript). Benchmarks use it as a fast path.
	// With NoTranscript the line is the read buffer itself, valid only
	// until OnReceive returns: copy what must outlive the call.
	OnReceive func(line []byte, at time.Time) (handled bool)
	// NoTranscript keeps no lines (Check then has nothing to validate)
	// and no updates: for long benchmark runs. Its receive path copies a
	// line only when something keeps it (a response a Call awaits) and
	// decodes a notification no further than its method.
	NoTranscript bool
}

// Direction says who wrote a transcript line.
type Direction uint8

// The directions of a transcript line.
const (
	// Sent lines were written by the client to the agent.
	Sent Direction = iota + 1
	// Received lines were written by the agent.
	Received
)

// Line is one line of the transcript: its bytes without the "\n".
type Line struct {
	Dir  Direction
	Data []byte
	At   time.Time
	// NoEOL marks a received line the agent ended without "\n" (its last).
	NoEOL bool
}

// Frame is a decoded line the agent wrote.
type Frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
	// Raw is the line exactly as written (without "\n").
	Raw []byte `json:"-"`
}

// IsResponse reports whether f answers a request.
func (f Frame) IsResponse() bool { return f.Method == "" && f.ID != nil }

// IsRequest reports whether f is a request of the agent's.
func (f Frame) IsRequest() bool { return f.Method != "" && f.ID != nil && string(f.ID) != "null" }

// Update is one session/update notification.
type Update struct {
	// Seq is the index of its line among the received lines.
	Seq       int
	SessionID string
	// Kind is the update's sessionUpdate.
	Kind string
	// Raw is the update object.
	Raw json.RawMessage
}

// Conn is one client connection to an agent. Its methods are safe for
// concurrent use.
type Conn struct {
	opts Options
	w    io.WriteCloser

	wmu sync.Mutex // one write at a time

	ctx    context.Context // ends when the agent's output ends
	cancel context.CancelFunc
	done   chan struct{} // the read loop ended
	// stopped is closed when the agent stopped (serve returned, process
	// exited); done when there is no such event.
	stopped <-chan struct{}

	mu        sync.Mutex
	changed   chan struct{} // made by a waiter, closed when a line arrives or the output ends
	lines     []Line
	received  []int               // indexes into lines of the received ones
	nreceived int                 // lines received (kept or not)
	methods   map[string][]string // raw request id → methods sent with it
	pending   map[string]*Call
	updates   []Update
	requests  []Request
	strays    []string
	readErr   error
	serveErr  error
	nextID    int64
}

// New connects to an agent that reads w and writes r; it reads r until it
// ends. Closing w (CloseWrite) is the client's EOF.
func New(w io.WriteCloser, r io.Reader, opts Options) *Conn {
	c := newConn(w, opts)
	c.stopped = c.done
	go c.read(r)
	return c
}

func newConn(w io.WriteCloser, opts Options) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &Conn{opts: opts, w: w, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		methods: map[string][]string{}, pending: map[string]*Call{}}
}

// ServeFunc is an agent served over a reader and a writer, such as
// acp.Server.Serve.
type ServeFunc func(ctx context.Context, r io.Reader, w io.Writer) error

// Serve runs serve in a goroutine over in-process pipes and connects to
// it. When serve returns its output is closed; Stopped reports it and
// ServeErr its error.
func Serve(serve ServeFunc, opts Options) *Conn {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := newConn(inW, opts)
	stopped := make(chan struct{})
	c.stopped = stopped
	go func() {
		err := serve(context.Background(), inR, outW)
		c.mu.Lock()
		c.serveErr = err
		c.mu.Unlock()
		_ = inR.Close()
		_ = outW.Close()
		close(stopped)
	}()
	go c.read(outR)
	return c
}

// ServeErr returns what the served agent returned (nil while it runs).
func (c *Conn) ServeErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serveErr
}

// Capabilities returns the clientCapabilities Initialize advertises:
// Options.ClientCapabilities, else what the client hosts (fs with FS,
// terminal with Terminals, form elicitation with an elicitation/create
// handler) and nothing more.
func (c *Conn) Capabilities() any {
	if c.opts.ClientCapabilities != nil {
		return c.opts.ClientCapabilities
	}
	caps := map[string]any{}
	if c.opts.FS != nil {
		caps["fs"] = map[string]bool{"readTextFile": true, "writeTextFile": true}
	}
	if c.opts.Terminals != nil {
		caps["terminal"] = true
	}
	if c.opts.Handlers["elicitation/create"] != nil {
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	return caps
}

// Initialize sends initialize with protocol version 1 and Capabilities,
// and returns the agent's result.
func (c *Conn) Initialize(ctx context.Context) (json.RawMessage, error) {
	return c.Call(ctx, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": c.Capabilities()})
}

// Call is a request in flight.
type Call struct {
	// ID is the request's id as sent.
	ID     json.RawMessage
	Method string
	ch     chan Frame
	c      *Conn
}

// Wait waits for the response, the end of the agent's output or ctx. An
// error response is returned as a Frame with Error set, not as an error.
func (k *Call) Wait(ctx context.Context) (Frame, error) {
	select {
	case f := <-k.ch:
		return f, nil
	case <-ctx.Done():
		return Frame{}, fmt.Errorf("%s: no response: %w", k.Method, ctx.Err())
	case <-k.c.done:
		select { // the response may have been the last line
		case f := <-k.ch:
			return f, nil
		default:
		}
		return Frame{}, fmt.Errorf("%s: the agent closed its output before answering: %w", k.Method, k.c.Err())
	}
}

// Start sends a request with the next integer id (from 0).
func (c *Conn) Start(method string, params any) (*Call, error) {
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	c.mu.Unlock()
	return c.StartID(json.RawMessage(strconv.FormatInt(id, 10)), method, params)
}

// StartID sends a request with the given raw JSON id.
func (c *Conn) StartID(id json.RawMessage, method string, params any) (*Call, error) {
	k := &Call{ID: id, Method: method, ch: make(chan Frame, 1), c: c}
	c.mu.Lock()
	c.pending[string(id)] = k
	if !c.opts.NoTranscript {
		c.methods[string(id)] = append(c.methods[string(id)], method)
	}
	c.mu.Unlock()
	msg := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  any             `json:"params,omitempty"`
	}{"2.0", id, method, params}
	b, err := jsonx.Marshal(msg)
	if err == nil {
		err = c.write(append(b, '\n'), [][]byte{b}) // recorded above, not probed
	}
	if err != nil {
		c.mu.Lock()
		delete(c.pending, string(id))
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return k, nil
}

// Call sends a request and waits for its result; an error response is
// returned as an *Error.
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	k, err := c.Start(method, params)
	if err != nil {
		return nil, err
	}
	f, err := k.Wait(ctx)
	if err != nil {
		return nil, err
	}
	if f.Error != nil {
		return nil, fmt.Errorf("%s: %w", method, f.Error)
	}
	return f.Result, nil
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	return c.Send(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
}

// Send writes v, JSON-encoded without HTML escapes, as one line.
func (c *Conn) Send(v any) error {
	b, err := jsonx.Marshal(v)
	if err != nil {
		return err
	}
	return c.SendLines(b)
}

// SendLines writes the lines, each followed by "\n", in one write. The id
// and method of each request among them are remembered, for Check to
// validate the responses. The transcript keeps the lines themselves: do
// not modify them afterwards.
func (c *Conn) SendLines(lines ...[]byte) error {
	var b bytes.Buffer
	for _, l := range lines {
		c.probe(l)
		b.Write(l)
		b.WriteByte('\n')
	}
	return c.write(b.Bytes(), lines)
}

// Write writes b as is (a byte-exact script: several lines, partial lines,
// garbage). Requests in it are not remembered; see Expect. The transcript
// keeps b itself, uncopied (a test sending 64 MiB allocates nothing for
// it): do not modify it afterwards.
func (c *Conn) Write(b []byte) (int, error) {
	if err := c.write(b, [][]byte{b}); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (c *Conn) write(b []byte, record [][]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.opts.NoTranscript {
		now := time.Now()
		c.mu.Lock()
		for _, l := range record {
			c.lines = append(c.lines, Line{Dir: Sent, Data: l, At: now})
		}
		c.mu.Unlock()
	}
	_, err := c.w.Write(b)
	return err
}

// probe remembers the id and method of a request line (for Check, so
// not without a transcript).
func (c *Conn) probe(line []byte) {
	if len(line) > 1<<20 || c.opts.NoTranscript {
		return
	}
	var p struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &p) == nil && p.ID != nil && p.Method != nil {
		c.Expect(string(p.ID), *p.Method)
	}
}

// Expect records that a request with the raw id calls method, for Check
// to validate its response (the methods sent with one id answer in order).
func (c *Conn) Expect(id, method string) {
	c.mu.Lock()
	c.methods[id] = append(c.methods[id], method)
	c.mu.Unlock()
}

// CloseWrite closes the agent's input: the client's EOF. It does not wait
// for a write in progress (that write fails instead).
func (c *Conn) CloseWrite() error { return c.w.Close() }

// Done is closed when the agent's output has ended and been read.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Stopped is closed when the agent stopped: its serve function returned
// (Serve), its process exited (Spawn), or its output ended (New).
func (c *Conn) Stopped() <-chan struct{} { return c.stopped }

// Err returns why reading the agent's output ended (io.EOF for a clean
// end), nil while it goes on.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// read records and dispatches the agent's output until it ends.
func (c *Conn) read(r io.Reader) {
	defer close(c.done)
	defer c.cancel()
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			c.receive(line, time.Now())
		}
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			c.broadcast()
			c.mu.Unlock()
			if c.opts.Terminals != nil {
				c.opts.Terminals.Close()
			}
			return
		}
	}
}

// broadcast wakes every waiter, if any; c.mu is held.
func (c *Conn) broadcast() {
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// wake returns the channel broadcast closes next; c.mu is held.
func (c *Conn) wake() <-chan struct{} {
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.changed
}

// receive handles one line of the agent's output (with its "\n", if any).
// raw is the read buffer: it is copied only when the transcript keeps it.
func (c *Conn) receive(raw []byte, at time.Time) {
	noEOL := raw[len(raw)-1] != '\n'
	data := bytes.TrimSuffix(raw, []byte("\n"))
	if !c.opts.NoTranscript {
		data = bytes.Clone(data)
	}
	c.mu.Lock()
	seq := c.nreceived
	c.nreceived++
	if !c.opts.NoTranscript {
		c.received = append(c.received, len(c.lines))
		c.lines = append(c.lines, Line{Dir: Received, Data: data, At: at, NoEOL: noEOL})
	}
	c.mu.Unlock()
	handled := c.opts.OnReceive != nil && c.opts.OnReceive(data, at)
	if !handled {
		c.dispatch(seq, data)
	}
	c.mu.Lock()
	c.broadcast()
	c.mu.Unlock()
}

// dispatch handles a line no OnReceive took. With NoTranscript, data is
// the read buffer (copied where a Frame keeps it), and a notification,
// which nothing keeps, is decoded no further than its method.
func (c *Conn) dispatch(seq int, data []byte) {
	if c.opts.NoTranscript {
		var h struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(bytes.TrimSpace(data), &h) != nil {
			return // Check reports it
		}
		if h.ID == nil && h.Method != "" {
			return
		}
		data = bytes.Clone(data)
	}
	var f Frame
	if json.Unmarshal(bytes.TrimSpace(data), &f) != nil {
		return // Check reports it
	}
	f.Raw = data
	switch {
	case f.IsRequest():
		req := Request{ID: f.ID, Method: f.Method, Params: f.Params}
		if !c.opts.NoTranscript {
			c.mu.Lock()
			c.requests = append(c.requests, req)
			c.mu.Unlock()
		}
		c.answer(req)
	case f.Method == "session/update":
		if c.opts.NoTranscript {
			return
		}
		var p struct {
			SessionID string          `json:"sessionId"`
			Update    json.RawMessage `json:"update"`
		}
		_ = json.Unmarshal(f.Params, &p)
		var u struct {
			Kind string `json:"sessionUpdate"`
		}
		_ = json.Unmarshal(p.Update, &u)
		c.mu.Lock()
		c.updates = append(c.updates, Update{Seq: seq, SessionID: p.SessionID, Kind: u.Kind, Raw: p.Update})
		c.mu.Unlock()
	case f.IsResponse():
		c.mu.Lock()
		k := c.pending[string(f.ID)]
		delete(c.pending, string(f.ID))
		if k == nil {
			c.strays = append(c.strays, "a response to no pending request: "+clipLine(data))
		}
		c.mu.Unlock()
		if k != nil {
			k.ch <- f
		}
	}
}
