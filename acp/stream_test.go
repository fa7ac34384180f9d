package acp

// This file holds the wire harness and the in-memory fake agent every test
// of the package uses (exported so the external acp_test package can use
// them too: composition imports acp, so the tests that drive a composed
// runtime live there), and the framing tests (acp-bridge § 1).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/acpschema"
	"github.com/dsh-acp/dsh-acp/session"
)

// WaitFor bounds every wait of the harness.
const WaitFor = 5 * time.Second

// KnownBug skips a test that demonstrates a reported bug unless ACP_BUGS is
// set (ACP_BUGS=1 go test -race ./acp/ shows the failures).
func KnownBug(tb testing.TB, what string) {
	tb.Helper()
	if os.Getenv("ACP_BUGS") == "" {
		tb.Skip("BUG: " + what + " (set ACP_BUGS=1 to run)")
	}
}

// RaceEnabled reports whether the test binary runs under the race detector.
func RaceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// Harness

// Harness runs Server.Serve over io.Pipes: tests write raw lines and read
// raw output lines, every wait bounded. At cleanup it ends the input (EOF),
// waits for Serve to return and validates every line the server wrote
// (validateFrame: envelope key order, no HTML escapes, ACP schema).
type Harness struct {
	tb  testing.TB
	Srv *Server

	inW  *io.PipeWriter
	outW *io.PipeWriter

	served   chan struct{}
	readDone chan struct{}
	wake     chan struct{}

	mu       sync.Mutex
	lines    [][]byte
	badEnds  []string
	pos      int
	methods  map[string][]string // raw request id → methods sent with it, in order
	eofAt    int                 // len(lines) when input ended (-1: not yet)
	nextID   int
	finished bool

	// NoValidate skips frame validation at cleanup (benchmarks only).
	NoValidate bool
}

// StartHarness serves srv over pipes until the test ends.
func StartHarness(tb testing.TB, srv *Server) *Harness {
	tb.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &Harness{tb: tb, Srv: srv, inW: inW, outW: outW,
		served: make(chan struct{}), readDone: make(chan struct{}), wake: make(chan struct{}, 1),
		methods: map[string][]string{}, eofAt: -1, nextID: 100}
	go func() {
		defer close(h.served)
		_ = srv.Serve(context.Background(), inR, outW)
	}()
	go h.readLoop(outR)
	tb.Cleanup(h.finish)
	return h
}

func (h *Harness) readLoop(r io.Reader) {
	defer close(h.readDone)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			h.mu.Lock()
			if line[len(line)-1] != '\n' {
				h.badEnds = append(h.badEnds, acpschema.ClipLine(line))
			}
			h.lines = append(h.lines, bytes.TrimSuffix(line, []byte("\n")))
			h.mu.Unlock()
			select {
			case h.wake <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// finish ends the input, waits for Serve and validates every emitted line.
func (h *Harness) finish() {
	h.EOF()
	_ = h.outW.Close()
	select {
	case <-h.readDone:
	case <-time.After(WaitFor):
		h.tb.Errorf("harness: output reader did not finish within %v", WaitFor)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.finished = true
	for _, b := range h.badEnds {
		h.tb.Errorf("frame not terminated by \\n: %s", b)
	}
	if h.NoValidate {
		return
	}
	for _, line := range h.lines {
		// Answers pop the methods sent with their id, in order.
		method := ""
		if id := frameID(line); id != nil && !isRequestFrame(line) {
			if q := h.methods[string(id)]; len(q) > 0 {
				method, h.methods[string(id)] = q[0], q[1:]
			}
		}
		validateFrame(h.tb, line, method)
	}
}

// isRequestFrame reports whether an emitted frame has a method.
func isRequestFrame(line []byte) bool {
	var p struct {
		Method *string `json:"method"`
	}
	_ = json.Unmarshal(line, &p)
	return p.Method != nil
}

// frameID returns the raw id of an emitted frame (nil if none).
func frameID(line []byte) json.RawMessage {
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(line, &p)
	return p.ID
}

// EOF closes the client's side of the input and waits (bounded) for Serve
// to return. It reports whether Serve returned.
func (h *Harness) EOF() bool {
	h.mu.Lock()
	if h.eofAt < 0 {
		h.eofAt = len(h.lines)
	}
	h.mu.Unlock()
	_ = h.inW.Close()
	select {
	case <-h.served:
		return true
	case <-time.After(WaitFor):
		h.tb.Errorf("Serve did not return within %v of EOF", WaitFor)
		return false
	}
}

// LinesAfterEOF returns the lines read after EOF was sent.
func (h *Harness) LinesAfterEOF() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.eofAt < 0 {
		return nil
	}
	return append([][]byte(nil), h.lines[h.eofAt:]...)
}

// Expect records that the request id (raw JSON) calls method, for
// validating its response (Send does this itself for small lines).
func (h *Harness) Expect(id, method string) {
	h.mu.Lock()
	h.methods[id] = append(h.methods[id], method)
	h.mu.Unlock()
}

// Send writes the lines, each followed by "\n", in ONE write.
func (h *Harness) Send(lines ...string) {
	h.tb.Helper()
	var b bytes.Buffer
	for _, l := range lines {
		h.probe([]byte(l))
		b.WriteString(l)
		b.WriteByte('\n')
	}
	h.SendRaw(b.Bytes(), WaitFor)
}

func (h *Harness) probe(line []byte) {
	if len(line) > 1<<20 {
		return
	}
	var p struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &p) == nil && p.ID != nil && p.Method != nil {
		h.Expect(string(p.ID), *p.Method)
	}
}

// SendRaw writes b as is; the server must consume it within timeout.
func (h *Harness) SendRaw(b []byte, timeout time.Duration) {
	h.tb.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := h.inW.Write(b)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(h.tb, err, "write to server")
	case <-time.After(timeout):
		h.tb.Fatalf("server did not consume %d input bytes within %v (read loop blocked?)", len(b), timeout)
	}
}

// Next returns the next output line, failing after WaitFor.
func (h *Harness) Next() []byte {
	h.tb.Helper()
	return h.NextWithin(WaitFor)
}

// NextWithin returns the next output line, failing after d.
func (h *Harness) NextWithin(d time.Duration) []byte {
	h.tb.Helper()
	line, ok := h.TryNext(d)
	if !ok {
		h.tb.Fatalf("no output line within %v", d)
	}
	return line
}

// TryNext returns the next output line, or false after d.
func (h *Harness) TryNext(d time.Duration) ([]byte, bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		if h.pos < len(h.lines) {
			l := h.lines[h.pos]
			h.pos++
			h.mu.Unlock()
			return l, true
		}
		h.mu.Unlock()
		select {
		case <-h.wake:
		case <-h.readDone:
			h.mu.Lock()
			more := h.pos < len(h.lines)
			h.mu.Unlock()
			if !more {
				return nil, false
			}
		case <-deadline.C:
			return nil, false
		}
	}
}

// Await reads until the response to the request with raw id and returns
// it with the lines that came before it.
func (h *Harness) Await(id string) (resp []byte, before [][]byte) {
	h.tb.Helper()
	return h.AwaitWithin(id, WaitFor)
}

// AwaitWithin is Await with a custom bound.
func (h *Harness) AwaitWithin(id string, d time.Duration) (resp []byte, before [][]byte) {
	h.tb.Helper()
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		line, ok := h.TryNext(max(left, 0))
		if !ok {
			h.tb.Fatalf("no response to id %s within %v (lines before: %d)", id, d, len(before))
		}
		f := ParseWireFrame(h.tb, line)
		if f.Method == "" && string(f.ID) == id {
			return line, before
		}
		before = append(before, line)
	}
}

// Roundtrip sends a request and returns its response and the lines
// that arrived before it.
func (h *Harness) Roundtrip(id, method, params string) (resp []byte, before [][]byte) {
	h.tb.Helper()
	h.Send(RequestLine(id, method, params))
	return h.Await(id)
}

// Call sends a request with a fresh integer id and returns the response
// frame; other lines that arrive first are returned too.
func (h *Harness) Call(method, params string) (WireFrame, [][]byte) {
	h.tb.Helper()
	h.mu.Lock()
	h.nextID++
	id := fmt.Sprint(h.nextID)
	h.mu.Unlock()
	resp, before := h.Roundtrip(id, method, params)
	return ParseWireFrame(h.tb, resp), before
}

// NewSession opens a session at cwd and returns its id.
func (h *Harness) NewSession(cwd string) string {
	h.tb.Helper()
	f, _ := h.Call("session/new", `{"cwd":`+JSONQuote(cwd)+`,"mcpServers":[]}`)
	require.Nil(h.tb, f.Error, "session/new")
	var r struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(h.tb, json.Unmarshal(f.Result, &r))
	require.NotEmpty(h.tb, r.SessionID)
	return r.SessionID
}

// RequestLine builds a request line; params "" omits params.
func RequestLine(id, method, params string) string {
	s := `{"jsonrpc":"2.0","id":` + id + `,"method":` + JSONQuote(method)
	if params != "" {
		s += `,"params":` + params
	}
	return s + "}"
}

// NotificationLine builds a notification line.
func NotificationLine(method, params string) string {
	return `{"jsonrpc":"2.0","method":` + JSONQuote(method) + `,"params":` + params + `}`
}

// PromptParams builds session/prompt params with one text block.
func PromptParams(sid, text string) string {
	return `{"sessionId":` + JSONQuote(sid) + `,"prompt":[{"type":"text","text":` + JSONQuote(text) + `}]}`
}

// JSONQuote JSON-encodes s without HTML escaping.
func JSONQuote(s string) string { return string(mustJSON(s)) }

func mustJSON(v any) []byte {
	b, err := marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// WireFrame is a parsed output line.
type WireFrame struct {
	Raw    []byte
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// ParseWireFrame parses one output line.
func ParseWireFrame(tb testing.TB, line []byte) WireFrame {
	tb.Helper()
	var f WireFrame
	require.NoError(tb, json.Unmarshal(line, &f), "output line is not JSON: %s", acpschema.ClipLine(line))
	f.Raw = line
	return f
}

// UpdateKinds returns the sessionUpdate of each session/update line.
func UpdateKinds(tb testing.TB, lines [][]byte) []string {
	tb.Helper()
	var out []string
	for _, l := range lines {
		f := ParseWireFrame(tb, l)
		if f.Method != "session/update" {
			continue
		}
		var p struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
			} `json:"update"`
		}
		require.NoError(tb, json.Unmarshal(f.Params, &p))
		out = append(out, p.Update.SessionUpdate)
	}
	return out
}

// ---------------------------------------------------------------------------
// Fake agent

// FakeClock is a deterministic session clock (epoch ms, +1 per reading).
func FakeClock() session.Clock {
	var n atomic.Int64
	n.Store(1_767_225_600_000)
	return func() int64 { return n.Add(1) }
}

// FakeAgent is an in-memory Agent whose sessions use the real session.Log.
// A prompt's text steers its turn:
//
//	#block          stop mid-stream (after two chunks) until cancelled/closed
//	#end=<kind>     end with that turn/end reason kind (default completed;
//	                error carries "simulated provider error (HTTP 401)")
type FakeAgent struct {
	// Hook runs mid-turn, between the tool call and its result.
	Hook func(ctx context.Context, s *FakeSession, text string)
	// NewErr fails session/new.
	NewErr error
	// Knobs are each new session's config knobs (id → default value).
	Knobs map[string]string
	// Modes are the sessions' modes, default first (nil: not composed).
	Modes []string

	clock session.Clock

	mu       sync.Mutex
	n        int
	sessions []*FakeSession
	stored   map[string][]session.Event
	headers  map[string]session.Header
}

var (
	_ Agent   = (*FakeAgent)(nil)
	_ Session = (*FakeSession)(nil)
)

// NewFakeAgent returns an empty fake agent.
func NewFakeAgent() *FakeAgent {
	return &FakeAgent{clock: FakeClock(), stored: map[string][]session.Event{}, headers: map[string]session.Header{}}
}

// NewFakeServer returns a server over a fresh fake agent.
func NewFakeServer(opts Options) (*Server, *FakeAgent) {
	if opts.AgentName == "" {
		opts.AgentName, opts.AgentVersion = "dsh-acp", "test"
	}
	fa := NewFakeAgent()
	return NewServer(fa, opts, zerolog.Nop()), fa
}

// NewSession implements Agent.
func (a *FakeAgent) NewSession(_ context.Context, cwd string) (Session, error) {
	if a.NewErr != nil {
		return nil, a.NewErr
	}
	a.mu.Lock()
	a.n++
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", a.n)
	a.mu.Unlock()
	h := session.Header{ID: id, CreatedAt: a.clock(), Cwd: cwd}
	return a.open(session.NewLog(h, a.clock, nil)), nil
}

func (a *FakeAgent) open(l *session.Log) *FakeSession {
	s := &FakeSession{agent: a, log: l, tools: capabilities.NewRegistry(), active: map[int]context.CancelCauseFunc{},
		started: make(chan string, 64), ended: make(chan session.EndReason, 64), knobs: map[string]string{}}
	for k, v := range a.Knobs {
		s.knobs[k] = v
	}
	a.mu.Lock()
	a.sessions = append(a.sessions, s)
	a.mu.Unlock()
	return s
}

// LookupSession implements Agent.
func (a *FakeAgent) LookupSession(_ context.Context, id string) (session.Header, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.headers[id]
	if !ok {
		return session.Header{}, fmt.Errorf("session %q not found", id)
	}
	return h, nil
}

// ResumeSession implements Agent.
func (a *FakeAgent) ResumeSession(_ context.Context, id string) (Session, error) {
	a.mu.Lock()
	h, ok := a.headers[id]
	evs := a.stored[id]
	a.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("session %q not found", id)
	}
	return a.open(session.ResumeLog(h, evs, a.clock, nil)), nil
}

// Store records a stored session whose log holds one fake turn per text.
func (a *FakeAgent) Store(id, cwd string, texts ...string) []session.Event {
	l := session.NewLog(session.Header{ID: id, CreatedAt: a.clock(), Cwd: cwd}, a.clock, nil)
	s := &FakeSession{agent: &FakeAgent{clock: a.clock}, log: l, tools: capabilities.NewRegistry(), active: map[int]context.CancelCauseFunc{},
		started: make(chan string, 64), ended: make(chan session.EndReason, 64)}
	for _, t := range texts {
		s.Prompt(context.Background(), t)
	}
	a.mu.Lock()
	a.headers[id] = l.Header()
	a.stored[id] = l.Events()
	a.mu.Unlock()
	return l.Events()
}

// Sessions returns the sessions opened so far.
func (a *FakeAgent) Sessions() []*FakeSession {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*FakeSession(nil), a.sessions...)
}

// Session returns the open session with id.
func (a *FakeAgent) Session(tb testing.TB, id string) *FakeSession {
	tb.Helper()
	for _, s := range a.Sessions() {
		if s.ID() == id {
			return s
		}
	}
	tb.Fatalf("fake agent has no session %s", id)
	return nil
}

// FakeSession is one fake conversation.
type FakeSession struct {
	agent *FakeAgent
	log   *session.Log
	tools *capabilities.Registry

	turnMu sync.Mutex

	mu      sync.Mutex
	seq     int
	active  map[int]context.CancelCauseFunc // prompts entered, not returned
	journal []string
	prompts []string
	closed  bool
	closes  int
	knobs   map[string]string
	mode    string

	started chan string
	ended   chan session.EndReason
}

var errFakeDisposed = errors.New("disposed")

// ID implements Session.
func (s *FakeSession) ID() string { return s.log.Header().ID }

// Log implements Session.
func (s *FakeSession) Log() *session.Log { return s.log }

// Tools implements Session.
func (s *FakeSession) Tools() *capabilities.Registry { return s.tools }

// Knob implements Session.
func (s *FakeSession) Knob(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.knobs[id]
	return v, ok
}

// SetKnob implements Session.
func (s *FakeSession) SetKnob(id, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.knobs[id]; ok {
		s.knobs[id] = value
		s.journal = append(s.journal, "knob:"+id+"="+value)
	}
}

// Modes implements Session.
func (s *FakeSession) Modes() ([]string, bool) {
	return s.agent.Modes, s.agent.Modes != nil
}

// Mode implements Session.
func (s *FakeSession) Mode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode == "" {
		return "default"
	}
	return s.mode
}

// SetMode implements Session with the agent's error texts.
// Commands implements Session: the fake has no slash commands.
func (s *FakeSession) Commands() []agent.Command { return nil }

func (s *FakeSession) SetMode(id string) error {
	ids, ok := s.Modes()
	if !ok {
		return errors.New("session modes are not composed")
	}
	if !slices.Contains(ids, id) {
		return fmt.Errorf("unknown mode %q — available modes: %s", id, strings.Join(ids, ", "))
	}
	s.mu.Lock()
	s.mode = id
	s.journal = append(s.journal, "mode="+id)
	s.mu.Unlock()
	return nil
}

// Journal returns what the session saw, in order: "prompt", "turn",
// "dropped", "cancel:<reason>", "cancel-idle:<reason>", "end:<kind>",
// "close".
func (s *FakeSession) Journal() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.journal...)
}

// Prompts returns the texts the session received.
func (s *FakeSession) Prompts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.prompts...)
}

// Closes returns how often Close was called.
func (s *FakeSession) Closes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closes
}

// AwaitStarted waits until a turn is mid-stream and returns its text.
func (s *FakeSession) AwaitStarted(tb testing.TB) string {
	tb.Helper()
	select {
	case t := <-s.started:
		return t
	case <-time.After(WaitFor):
		tb.Fatalf("session %s: no turn started within %v", s.ID(), WaitFor)
		return ""
	}
}

// AwaitEnded waits until a prompt returns and gives its end reason.
func (s *FakeSession) AwaitEnded(tb testing.TB) session.EndReason {
	tb.Helper()
	select {
	case r := <-s.ended:
		return r
	case <-time.After(WaitFor):
		tb.Fatalf("session %s: no prompt returned within %v (journal %v)", s.ID(), WaitFor, s.Journal())
		return session.EndReason{}
	}
}

func (s *FakeSession) note(e string) {
	s.mu.Lock()
	s.journal = append(s.journal, e)
	s.mu.Unlock()
}

// Prompt implements Session: one realistic turn (turn/start, user/message,
// step/start, reasoning and text chunks, assistant/message, tool/call,
// todo/write, tool/result, step/end, turn/end).
func (s *FakeSession) Prompt(ctx context.Context, text string) session.EndReason {
	turnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.mu.Lock()
	s.seq++
	me := s.seq
	s.journal = append(s.journal, "prompt")
	s.prompts = append(s.prompts, text)
	if s.closed {
		s.journal = append(s.journal, "end:"+session.EndDisposed)
		s.mu.Unlock()
		return s.finish(session.EndReason{Kind: session.EndDisposed})
	}
	s.active[me] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.active, me)
		s.mu.Unlock()
	}()

	s.turnMu.Lock()
	defer s.turnMu.Unlock()
	if turnCtx.Err() != nil { // cancelled before it started: dropped, nothing logged
		s.note("dropped")
		return s.finish(s.abortReason(turnCtx))
	}
	s.note("turn")
	r := s.turn(turnCtx, text)
	s.note("end:" + r.Kind)
	return s.finish(r)
}

func (s *FakeSession) finish(r session.EndReason) session.EndReason {
	select {
	case s.ended <- r:
	default:
	}
	return r
}

func (s *FakeSession) abortReason(ctx context.Context) session.EndReason {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return session.EndReason{Kind: session.EndDisposed}
	}
	reason := "aborted"
	if c := context.Cause(ctx); c != nil {
		reason = c.Error()
	}
	return session.EndReason{Kind: session.EndAborted, Reason: reason}
}

// Chunks the fake streams, raw as a provider would record them.
const (
	FakeReasoningChunk = `{"type":"reasoning-delta","index":0,"text":"think <a> & b"}`
	FakeTextChunk      = `{"type":"text-delta","index":1,"text":"<b>&"}`
	FakeToolName       = "fake_tool" // no tool of that name: generic cards
	FakeToolArgs       = `{"q": "<a> & b"}`
	FakeToolOutput     = "ok <done> & \u2028fine"
	FakeTodo           = "write <tests> & fix"
)

func (s *FakeSession) turn(ctx context.Context, text string) session.EndReason {
	l := s.log
	turn := session.LastTurn(l.Events()) + 1
	l.Append(session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	l.Append(session.TypeUserMessage, session.Message{Content: []session.Block{session.TextBlock(text)}, Source: session.UserSource})
	ref := session.StepRef{Turn: turn, Step: 1}
	l.Append(session.TypeStepStart, ref)
	seqs := []int{
		l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: 1, Chunk: json.RawMessage(FakeReasoningChunk)}).Seq,
		l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: 1, Chunk: json.RawMessage(FakeTextChunk)}).Seq,
	}
	select {
	case s.started <- prefix(text):
	default:
	}
	if strings.Contains(text, "#block") {
		<-ctx.Done()
	}
	if ctx.Err() != nil {
		r := s.abortReason(ctx)
		if r.Kind == session.EndDisposed {
			// A disposed turn that still streams: nothing of it may reach
			// the client after EOF (acp-bridge § 1).
			l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: 1, Chunk: json.RawMessage(`{"type":"text-delta","index":1,"text":" (disposed)"}`)})
		}
		l.Append(session.TypeStepEnd, ref)
		l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: r})
		return r
	}
	callID := fmt.Sprintf("call_%d", turn)
	l.Append(session.TypeAssistantMessage, session.AssistantMessage{Turn: turn, Step: 1, Content: []session.Block{
		{Type: session.BlockReasoning, Text: "think <a> & b"},
		session.TextBlock("<b>&"),
		{Type: session.BlockToolCall, ID: callID, Name: FakeToolName, Arguments: FakeToolArgs},
	}}, session.WithSourceSeqs(seqs))
	call := l.Append(session.TypeToolCall, session.ToolCall{Turn: turn, Step: 1, CallID: callID, Name: FakeToolName, Arguments: FakeToolArgs})
	l.Append(session.TypeTodoWrite, session.TodoWrite{Todos: []session.Todo{{Content: FakeTodo, Status: "in_progress"}, {Content: "ship", Status: "pending"}}})
	if s.agent.Hook != nil {
		s.agent.Hook(ctx, s, text)
	}
	l.Append(session.TypeToolResult, session.ToolResult{Turn: turn, Step: 1, CallID: callID,
		Content: []session.Block{session.TextBlock(FakeToolOutput)}}, session.WithSourceSeqs([]int{call.Seq}))
	l.Append(session.TypeStepEnd, ref)
	r := session.EndReason{Kind: session.EndCompleted}
	if i := strings.Index(text, "#end="); i >= 0 {
		kind := strings.Fields(text[i+len("#end="):])[0]
		r = session.EndReason{Kind: kind}
		switch kind {
		case session.EndError:
			r = session.EndReason{Kind: kind, Step: 1, Message: "simulated provider error (HTTP 401)", Code: "AUTH"}
		case session.EndRejected:
			r.Reason = "hook"
		}
	}
	l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: r})
	return r
}

func prefix(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}

// Cancel implements Session: it aborts every prompt that has entered.
func (s *FakeSession) Cancel(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.active) == 0 {
		s.journal = append(s.journal, "cancel-idle:"+reason)
		return
	}
	s.journal = append(s.journal, "cancel:"+reason)
	for _, c := range s.active {
		c(errors.New(reason))
	}
}

// Close implements Session: running turns end disposed; it returns once
// they have.
func (s *FakeSession) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closes++
	s.closed = true
	s.journal = append(s.journal, "close")
	for _, c := range s.active {
		c(errFakeDisposed)
	}
	s.mu.Unlock()
	s.turnMu.Lock()
	defer s.turnMu.Unlock()
	return s.log.Flush(ctx)
}

// ---------------------------------------------------------------------------
// LineStream unit tests

// TestLineStreamReadObject feeds malformed and well-formed lines straight
// into ReadObject: each bad line is answered on the writer, the valid ones
// come out (ids rewritten to raw tokens) and reading continues.
func TestLineStreamReadObject(t *testing.T) {
	in := strings.Join([]string{
		"",
		"   ",
		"\r",
		"not json",
		`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`,
		`{"foo":1}`,
		`{"jsonrpc":"2.0","id":5}`,
		`42`,
		`{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{}}` + "\r",
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","id":true,"method":"authenticate"}`,
		`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"x","result":1}`,
		`{"jsonrpc":"2.0","id":"tail","method":"authenticate"}`, // no trailing newline
	}, "\n")
	var out bytes.Buffer
	s := NewLineStream(strings.NewReader(in), &out, nil, zerolog.Nop())

	var msgs []string
	for {
		var m json.RawMessage
		err := s.ReadObject(&m)
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		msgs = append(msgs, string(m))
	}
	// Params are set aside (keyed by "meta") so jsonrpc2 never re-encodes them.
	require.Equal(t, []string{
		`{"jsonrpc":"2.0","id":"\u0000raw:1","method":"authenticate","meta":0}`,
		`{"jsonrpc":"2.0","method":"session/cancel","meta":1}`,
		`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`,
		`{"jsonrpc":"2.0","id":"\u0000raw:\"tail\"","method":"authenticate"}`,
	}, msgs)
	for key, want := range []string{`{}`, `{"sessionId":"s"}`} {
		meta := json.RawMessage(strconv.Itoa(key))
		p, ok := s.TakeParams(&meta)
		require.True(t, ok)
		require.Equal(t, want, string(p))
		_, ok = s.TakeParams(&meta)
		require.False(t, ok, "params are handed out once")
	}

	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, got, 7, out.String())
	assert.Equal(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, got[0])
	for i, want := range []struct {
		id string
	}{{"null"}, {"null"}, {"5"}, {"null"}, {"null"}, {"7"}} {
		f := ParseWireFrame(t, []byte(got[i+1]))
		require.NotNil(t, f.Error, got[i+1])
		assert.EqualValues(t, CodeInvalidRequest, f.Error.Code, got[i+1])
		assert.Equal(t, "Invalid Request", f.Error.Message, got[i+1])
		assert.Equal(t, want.id, string(f.ID), got[i+1])
	}
	for _, l := range got {
		validateFrame(t, []byte(l), "")
	}
}

// TestLineStreamAgentRequests checks the framing of agent→client requests
// (written by jsonrpc2 through WriteObject) and the routing of the client's
// responses: ids count from 0, key order jsonrpc/id/method/params, no HTML
// escaping, and the read side keeps working while a call is pending.
func TestLineStreamAgentRequests(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inW.Close()
	s := NewLineStream(inR, outW, nil, zerolog.Nop())
	handled := make(chan string, 4)
	conn := jsonrpc2.NewConn(context.Background(), s, jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
		handled <- r.Method
		return nil, nil
	}))
	defer conn.Close()
	out := bufio.NewReader(outR)
	readLine := func() string {
		t.Helper()
		ch := make(chan string, 1)
		go func() {
			l, _ := out.ReadString('\n')
			ch <- l
		}()
		select {
		case l := <-ch:
			require.True(t, strings.HasSuffix(l, "\n"), l)
			return strings.TrimSuffix(l, "\n")
		case <-time.After(WaitFor):
			t.Fatal("no agent request written")
			return ""
		}
	}
	type permParams struct {
		SessionID string `json:"sessionId"`
		ToolCall  struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"toolCall"`
		Options []map[string]string `json:"options"`
	}
	perm := permParams{SessionID: "s-1"}
	perm.ToolCall.ToolCallID = "call_<1>&"
	perm.Options = []map[string]string{{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"}}

	type callResult struct {
		v   json.RawMessage
		err error
	}
	results := make(chan callResult, 2)
	call := func(method string, params any) {
		var v json.RawMessage
		err := conn.Call(context.Background(), method, params, &v)
		results <- callResult{v, err}
	}
	go call("session/request_permission", perm)
	line := readLine()
	assert.Equal(t, `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s-1","toolCall":{"toolCallId":"call_<1>&"},"options":[{"kind":"allow_once","name":"Allow once","optionId":"allow-once"}]}}`, line,
		"params keep their own key order (struct order; the option maps are sorted by encoding/json); the envelope order and literal <>& are the stream's")
	validateFrame(t, []byte(line), "session/request_permission")

	// While the call is pending, inbound requests are still read and handled.
	writeIn := func(l string) {
		done := make(chan struct{})
		go func() { _, _ = io.WriteString(inW, l+"\n"); close(done) }()
		select {
		case <-done:
		case <-time.After(WaitFor):
			t.Fatal("stream did not read input while a call was pending")
		}
	}
	writeIn(`{"jsonrpc":"2.0","method":"_probe","params":{}}`)
	select {
	case m := <-handled:
		assert.Equal(t, "_probe", m)
	case <-time.After(WaitFor):
		t.Fatal("notification not handled while a call was pending")
	}
	writeIn(`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}}`)
	select {
	case r := <-results:
		require.NoError(t, r.err)
		assert.JSONEq(t, `{"outcome":{"outcome":"selected","optionId":"allow-once"}}`, string(r.v))
	case <-time.After(WaitFor):
		t.Fatal("call result not delivered")
	}

	type elicitParams struct {
		SessionID       string          `json:"sessionId"`
		Mode            string          `json:"mode"`
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	go call("elicitation/create", elicitParams{SessionID: "s-1", Mode: "form", Message: "Pick <one> & go\u2028",
		RequestedSchema: json.RawMessage(`{"type":"object","title":"Question","properties":{"custom":{"type":"string","title":"Pick <one> & go"}},"required":["custom"]}`)})
	line = readLine()
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"sessionId":"s-1","mode":"form","message":"Pick <one> & go`+"\u2028"+`","requestedSchema":{"type":"object","title":"Question","properties":{"custom":{"type":"string","title":"Pick <one> & go"}},"required":["custom"]}}}`, line)
	validateFrame(t, []byte(line), "elicitation/create")
	writeIn(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}`)
	select {
	case r := <-results:
		require.Error(t, r.err, "an error response fails the call")
	case <-time.After(WaitFor):
		t.Fatal("call error not delivered")
	}
}

// ---------------------------------------------------------------------------
// Server framing tests

func newFakeHarness(t *testing.T, opts Options) (*Harness, *FakeAgent) {
	srv, fa := NewFakeServer(opts)
	return StartHarness(t, srv), fa
}

const initParams = `{"protocolVersion":1,"clientCapabilities":{}}`

const initResult = `{"protocolVersion":1,"agentInfo":{"name":"dsh-acp","version":"test"},"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false,"audio":false,"embeddedContext":false}},"authMethods":[]}`

func TestParseErrorKeepsServing(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	h.Send("this is not json", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+initParams+`}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, string(h.Next()))
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":`+initResult+`}`, string(h.Next()))

	// Truncated JSON, two objects on a line, trailing garbage: all -32700.
	h.Send(`{"jsonrpc":"2.0","id":2,"method":"authenticate"`, `{}{}`, `{"a":1} x`)
	for range 3 {
		assert.Equal(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, string(h.Next()))
	}
	resp, before := h.Roundtrip("3", "authenticate", "{}")
	assert.Empty(t, before)
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{}}`, string(resp))
}

func TestInvalidRequests(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	for _, c := range []struct{ line, id string }{
		{`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, "null"},
		{`[]`, "null"},
		{`"initialize"`, "null"},
		{`null`, "null"},
		{`{"foo":1}`, "null"},
		{`{"jsonrpc":"2.0","id":5}`, "5"},
		{`{"jsonrpc":"2.0","id":"q"}`, `"q"`},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}`, "null"},
	} {
		h.Send(c.line)
		line := h.Next()
		f := ParseWireFrame(t, line)
		require.NotNil(t, f.Error, "%s → %s", c.line, line)
		assert.EqualValues(t, CodeInvalidRequest, f.Error.Code, "%s → %s", c.line, line)
		assert.Equal(t, "Invalid Request", f.Error.Message)
		assert.Equal(t, c.id, string(f.ID), "%s → %s", c.line, line)
		assert.True(t, bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":`+c.id+`,"error":{"code":-32600,"message":"Invalid Request"`)), string(line))
	}
	resp, before := h.Roundtrip("6", "authenticate", "{}")
	assert.Empty(t, before)
	assert.Equal(t, `{"jsonrpc":"2.0","id":6,"result":{}}`, string(resp))
}

func TestMethodNotFound(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	for i, m := range []string{"x/y", "session/list", "session/close", "logout", "_vendor/thing", "providers/list", "nes/suggest"} {
		id := fmt.Sprint(i + 1)
		resp, _ := h.Roundtrip(id, m, "{}")
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32601,"message":"\"Method not found\": `+m+`","data":{"method":"`+m+`"}}}`, string(resp))
	}
}

// Notifications never get a response: unknown ones, _-prefixed ones and a
// cancel for an unknown session are ignored.
func TestNotificationsIgnored(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	h.Send(
		NotificationLine("x/y", "{}"),
		NotificationLine("_foo", `{"a":1}`),
		NotificationLine("_zed/ping", `null`),
		`{"jsonrpc":"2.0","method":"document/didOpen"}`,
		NotificationLine("session/cancel", `{"sessionId":"nope"}`),
		NotificationLine("session/cancel", `"garbage"`),
		NotificationLine("initialize", initParams), // a request method sent as a notification
	)
	resp, before := h.Roundtrip("1", "authenticate", "{}")
	assert.Empty(t, before, "notifications must produce no output")
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, string(resp))
}

func TestCRLFAndBlankLines(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	h.SendRaw([]byte("\r\n\n   \n\t\r\n"+`{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{}}`+"\r\n\r\n"+
		`  {"jsonrpc":"2.0","id":2,"method":"initialize","params":`+initParams+`}  `+"\r\n"), WaitFor)
	h.Expect("1", "authenticate")
	h.Expect("2", "initialize")
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, string(h.Next()))
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":`+initResult+`}`, string(h.Next()))
}

// Request ids are echoed byte-identically, whatever their JSON type, on
// immediate answers, errors and deferred (prompt) answers.
func TestRequestIDsEchoed(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	sid := h.NewSession("/work")
	ids := []string{`"abc"`, `-1`, `9007199254740993`, `1e3`, `0`, `18446744073709551616`, `"a\"b\u00e9 <&>"`, `""`, `-0`, `null`}
	for _, id := range ids {
		resp, _ := h.Roundtrip(id, "authenticate", "{}")
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`, string(resp))
	}
	for _, id := range ids[:6] {
		resp, _ := h.Roundtrip(id, "no/such", "")
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32601,"message":"\"Method not found\": no/such","data":{"method":"no/such"}}}`, string(resp))
	}
	for _, id := range []string{`9007199254740993`, `"abc"`, `-1`, `18446744073709551616`} {
		resp, _ := h.Roundtrip(id, "session/prompt", PromptParams(sid, "hello"))
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{"stopReason":"end_turn"}}`, string(resp))
	}
	resp, _ := h.Roundtrip(`-7`, "session/new", `{"cwd":"relative"}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":-7,"error":{"code":-32602,"message":"Invalid params: cwd must be an absolute path: relative"}}`, string(resp))
}

// A full turn of the fake: the updates in log order with their exact
// bytes (key order, literal <, >, &, U+2028), then the answer.
func TestPromptStreamsUpdatesInKeyOrder(t *testing.T) {
	h, fa := newFakeHarness(t, Options{})
	sid := h.NewSession("/work")
	resp, before := h.Roundtrip("7", "session/prompt", PromptParams(sid, "hi"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}`, string(resp))
	pre := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + sid + `","update":`
	want := []string{
		pre + `{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"think <a> & b"}}}}`,
		pre + `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"<b>&"}}}}`,
		pre + `{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"fake_tool","kind":"other","status":"in_progress","rawInput":{"q":"<a> & b"}}}}`,
		pre + `{"sessionUpdate":"plan","entries":[{"content":"write <tests> & fix","priority":"medium","status":"in_progress"},{"content":"ship","priority":"medium","status":"pending"}]}}}`,
		pre + `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"ok <done> & ` + "\u2028" + `fine"}}]}}}`,
	}
	got := make([]string, len(before))
	for i, l := range before {
		got[i] = string(l)
	}
	assert.Equal(t, want, got)
	assert.Equal(t, []string{"hi"}, fa.Session(t, sid).Prompts())
}

// A prompt of at least 64 MiB in one line is read, handed to the agent
// intact and answered; the connection keeps serving.
func TestHugePromptLine(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB line")
	}
	h, fa := newFakeHarness(t, Options{})
	sid := h.NewSession("/work")
	const size = 64 << 20
	tail := "<&> end"
	var b bytes.Buffer
	b.Grow(size + 256)
	b.WriteString(`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"`)
	b.Write(bytes.Repeat([]byte("a"), size))
	b.WriteString(tail + `"}]}}` + "\n")
	require.GreaterOrEqual(t, b.Len(), size)
	h.Expect("9", "session/prompt")
	const bound = 2 * time.Minute // 64 MiB through several JSON passes under -race
	h.SendRaw(b.Bytes(), bound)
	b = bytes.Buffer{}
	resp, _ := h.AwaitWithin("9", bound)
	assert.Equal(t, `{"jsonrpc":"2.0","id":9,"result":{"stopReason":"end_turn"}}`, string(resp))
	ps := fa.Session(t, sid).Prompts()
	require.Len(t, ps, 1)
	assert.Equal(t, size+len(tail), len(ps[0]))
	assert.True(t, strings.HasSuffix(ps[0], "a"+tail))
	assert.Equal(t, strings.Count(ps[0], "a"), size)
	resp, _ = h.Roundtrip("10", "authenticate", "{}")
	assert.Equal(t, `{"jsonrpc":"2.0","id":10,"result":{}}`, string(resp))
}

// ---------------------------------------------------------------------------
// Concurrency and ordering

// The read loop never blocks on a prompt: while one is mid-stream, other
// requests (initialize, a second session, its prompt, set_config_option on
// the busy session) are answered.
func TestReadLoopServesWhilePromptInFlight(t *testing.T) {
	h, fa := newFakeHarness(t, Options{})
	a := h.NewSession("/work/a")
	h.Send(RequestLine("1", "session/prompt", PromptParams(a, "wait #block")))
	fa.Session(t, a).AwaitStarted(t)

	resp, _ := h.Roundtrip("2", "initialize", initParams)
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":`+initResult+`}`, string(resp))
	b := h.NewSession("/work/b")
	resp, _ = h.Roundtrip("3", "session/prompt", PromptParams(b, "quick"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`, string(resp))
	resp, _ = h.Roundtrip("4", "session/set_config_option", `{"sessionId":"`+a+`","configId":"reasoning-effort","value":"high"}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params: unknown config option \"reasoning-effort\""}}`, string(resp))
	resp, _ = h.Roundtrip("5", "session/prompt", PromptParams(a, "again"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: a prompt is already in flight for this session"}}`, string(resp))

	h.Send(NotificationLine("session/cancel", `{"sessionId":"`+a+`"}`))
	resp, _ = h.Await("1")
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, string(resp))
	r := fa.Session(t, a).AwaitEnded(t)
	assert.Equal(t, session.EndReason{Kind: session.EndAborted, Reason: "session/cancel"}, r)
	assert.Equal(t, []string{"wait #block"}, fa.Session(t, a).Prompts(), "the rejected prompt never reached the agent")

	// The aborted turn's answer is not sent twice, and the session takes a
	// new prompt.
	resp, before := h.Roundtrip("6", "session/prompt", PromptParams(a, "after"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":6,"result":{"stopReason":"end_turn"}}`, string(resp))
	for _, l := range before {
		assert.NotEqual(t, "1", string(ParseWireFrame(t, l).ID), "second answer to the cancelled prompt: %s", l)
	}
}

// A cancel written in the same write as the prompt it cancels is never
// lost: the prompt is answered cancelled and the agent's turn either
// observes the cancel or is dropped before it starts (its context is
// already cancelled). Repeated, because the failure mode is a scheduling
// race.
func TestCancelInSameWriteAsPrompt(t *testing.T) {
	h, fa := newFakeHarness(t, Options{})
	lost := 0
	const rounds = 10
	for i := range rounds {
		sid := h.NewSession("/work")
		id := fmt.Sprint(1000 + i)
		h.Send(RequestLine(id, "session/prompt", PromptParams(sid, "long #block")),
			NotificationLine("session/cancel", `{"sessionId":"`+sid+`"}`))
		resp, _ := h.Await(id)
		require.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{"stopReason":"cancelled"}}`, string(resp))
		s := fa.Session(t, sid)
		select {
		case r := <-s.ended:
			assert.Equal(t, session.EndAborted, r.Kind)
			assert.Equal(t, "session/cancel", r.Reason)
			j := s.Journal()
			require.GreaterOrEqual(t, len(j), 2, j)
			if j[0] != "prompt" {
				assert.Contains(t, j, "dropped", "a cancel seen before the prompt must drop its turn: %v", j)
			}
		case <-time.After(2 * time.Second):
			lost++
			t.Logf("round %d: journal %v — the turn is still running after its cancel", i, s.Journal())
			s.Close(context.Background()) // unblock it
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d cancels written with their prompt were lost: the turn ran on after the client got stopReason cancelled", lost, rounds)
	}
}

// Notifications emitted inside a turn precede the prompt's answer, and a
// cancelled turn's late updates may follow it; no update of a session
// reaches another session.
func TestUpdatesAreDemultiplexed(t *testing.T) {
	h, _ := newFakeHarness(t, Options{})
	a := h.NewSession("/a")
	b := h.NewSession("/b")
	h.Send(RequestLine("1", "session/prompt", PromptParams(a, "one")), RequestLine("2", "session/prompt", PromptParams(b, "two")))
	seen := map[string][]string{}
	answered := map[string]bool{}
	for len(answered) < 2 {
		f := ParseWireFrame(t, h.Next())
		if f.Method == "session/update" {
			var p struct {
				SessionID string `json:"sessionId"`
			}
			require.NoError(t, json.Unmarshal(f.Params, &p))
			require.False(t, answered[map[string]string{a: "1", b: "2"}[p.SessionID]], "update after its prompt was answered: %s", f.Raw)
			seen[p.SessionID] = append(seen[p.SessionID], string(f.Raw))
			continue
		}
		answered[string(f.ID)] = true
		assert.Equal(t, `{"stopReason":"end_turn"}`, string(f.Result))
	}
	assert.Len(t, seen[a], 5)
	assert.Len(t, seen[b], 5)
}

// Agent→client requests work while a prompt is in flight: the tool's
// permission request (Server.Answer, the approval.Answerer the bridge
// provides) is written between the tool's tool_call and its
// tool_call_update with ids counting from 0, the read loop keeps serving
// other requests while it is pending, and the client's answer maps to the
// outcome (acp-bridge § 13).
func TestPermissionRequestDuringPrompt(t *testing.T) {
	srv, fa := NewFakeServer(Options{})
	outcomes := make(chan approval.Outcome, 8)
	fa.Hook = func(ctx context.Context, s *FakeSession, text string) {
		calls := s.Log().Events()
		var c session.ToolCall
		for _, ev := range calls {
			if ev.Type == session.TypeToolCall {
				require.NoError(t, ev.Decode(&c))
			}
		}
		out, ok, err := srv.Answer(ctx, s.ID(), approval.Request{ToolName: c.Name, CallID: c.CallID, Reason: "needs <net> & disk"})
		assert.True(t, ok)
		assert.NoError(t, err)
		outcomes <- out
	}
	h := StartHarness(t, srv)
	sid := h.NewSession("/work")
	pre := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + sid + `","update":`
	for i, c := range []struct {
		reply string
		want  approval.Outcome
	}{
		{`"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}`, approval.AllowedOnce},
		{`"result":{"outcome":{"outcome":"selected","optionId":"reject-once"}}`, approval.Rejected},
		{`"result":{"outcome":{"outcome":"cancelled"}}`, approval.Cancelled},
		{`"error":{"code":-32603,"message":"Internal error"}`, approval.Unavailable},
	} {
		pid := fmt.Sprint(10 + i)
		h.Send(RequestLine(pid, "session/prompt", PromptParams(sid, "go")))
		callID := fmt.Sprintf("call_%d", i+1)
		var upd []string
		var req []byte
		for req == nil {
			line := h.Next()
			if f := ParseWireFrame(t, line); f.Method == "session/request_permission" {
				req = line
			} else {
				upd = append(upd, string(line))
			}
		}
		assert.Equal(t, []string{"agent_thought_chunk", "agent_message_chunk", "tool_call", "plan"}, UpdateKinds(t, toLines(upd)))
		wantID := fmt.Sprint(i)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+wantID+`,"method":"session/request_permission","params":{"sessionId":"`+sid+`","toolCall":{"toolCallId":"`+callID+`"},"options":[{"optionId":"allow-once","name":"Allow once","kind":"allow_once"},{"optionId":"reject-once","name":"Reject","kind":"reject_once"}]}}`, string(req))

		// The read loop serves while the agent waits for the client.
		resp, _ := h.Roundtrip(fmt.Sprint(20+i), "initialize", initParams)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+fmt.Sprint(20+i)+`,"result":`+initResult+`}`, string(resp))
		other := h.NewSession("/other")
		assert.NotEqual(t, sid, other)

		h.Send(`{"jsonrpc":"2.0","id":` + wantID + `,` + c.reply + `}`)
		select {
		case out := <-outcomes:
			assert.Equal(t, c.want, out, c.reply)
		case <-time.After(WaitFor):
			t.Fatalf("permission answer %s not delivered", c.reply)
		}
		resp, before := h.Await(pid)
		assert.Equal(t, []string{pre + `{"sessionUpdate":"tool_call_update","toolCallId":"` + callID + `","status":"completed","content":[{"type":"content","content":{"type":"text","text":"ok <done> & ` + "\u2028" + `fine"}}]}}}`}, toStrings(before))
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+pid+`,"result":{"stopReason":"end_turn"}}`, string(resp))
	}
}

func toLines(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func toStrings(ls [][]byte) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l)
	}
	return out
}

// ask_user_question's elicitation/create requests (Server.Ask) go out one
// per question, in order, while the prompt is in flight; the form follows
// acp-bridge § 14 and the answers map back.
func TestElicitationDuringPrompt(t *testing.T) {
	srv, fa := NewFakeServer(Options{})
	type result struct {
		answers []capabilities.Answer
		err     error
	}
	results := make(chan result, 4)
	fa.Hook = func(ctx context.Context, s *FakeSession, text string) {
		a, err := srv.Ask(ctx, s.ID(), []capabilities.Question{
			{ID: "q1", Question: "Pick <one> & go", Options: []capabilities.QuestionOption{{Label: "a<b", Description: "first & best"}, {Label: "c"}}},
			{ID: "q2", Header: "Reason", Question: "Why?"},
			{ID: "q3", Question: "Which?", Options: []capabilities.QuestionOption{{Label: "x"}, {Label: "y"}}, MultiSelect: true},
		})
		results <- result{a, err}
	}
	h := StartHarness(t, srv)
	sid := h.NewSession("/work")
	h.Send(RequestLine("5", "session/prompt", PromptParams(sid, "ask")))
	nextRequest := func() []byte {
		t.Helper()
		for {
			line := h.Next()
			if f := ParseWireFrame(t, line); f.Method != "" && f.ID != nil {
				return line
			}
		}
	}
	assert.Equal(t, `{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"sessionId":"`+sid+`","mode":"form","message":"Pick <one> & go","requestedSchema":{"type":"object","title":"Question","properties":{"choice":{"type":"string","title":"Pick <one> & go","description":"Choose one option, or fill a custom answer below.","oneOf":[{"const":"a<b","title":"a<b: first & best"},{"const":"c","title":"c"}]},"custom":{"type":"string","title":"Custom answer","description":"Optional free-form answer. Leave empty to use the selected option."}},"required":[]}}}`, string(nextRequest()))
	resp, _ := h.Roundtrip("6", "authenticate", "{}")
	assert.Equal(t, `{"jsonrpc":"2.0","id":6,"result":{}}`, string(resp))
	h.Send(`{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"choice":"a<b","custom":"  "}}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"sessionId":"`+sid+`","mode":"form","message":"Why?","requestedSchema":{"type":"object","title":"Reason","properties":{"custom":{"type":"string","title":"Why?"}},"required":["custom"]}}}`, string(nextRequest()))
	h.Send(`{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"custom":"because <x>"}}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{"sessionId":"`+sid+`","mode":"form","message":"Which?","requestedSchema":{"type":"object","title":"Question","properties":{"choice":{"type":"array","title":"Which?","description":"Choose one or more options, or fill a custom answer below.","items":{"anyOf":[{"const":"x","title":"x"},{"const":"y","title":"y"}]}},"custom":{"type":"string","title":"Custom answer","description":"Optional free-form answer. Leave empty to use the selected option."}},"required":[]}}}`, string(nextRequest()))
	h.Send(`{"jsonrpc":"2.0","id":2,"result":{"action":"accept","content":{"choice":["x","","y"]}}}`)
	select {
	case r := <-results:
		require.NoError(t, r.err)
		because := "because <x>"
		assert.Equal(t, []capabilities.Answer{{ID: "q1", Selected: []string{"a<b"}}, {ID: "q2", Selected: []string{}, Custom: &because}, {ID: "q3", Selected: []string{"x", "y"}}}, r.answers)
	case <-time.After(WaitFor):
		t.Fatal("answers not delivered")
	}
	resp, _ = h.Await("5")
	assert.Equal(t, `{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}`, string(resp))

	// A declined form fails the question.
	h.Send(RequestLine("7", "session/prompt", PromptParams(sid, "ask again")))
	assert.Contains(t, string(nextRequest()), `"id":3,"method":"elicitation/create"`)
	h.Send(`{"jsonrpc":"2.0","id":3,"result":{"action":"decline"}}`)
	select {
	case r := <-results:
		require.Error(t, r.err)
		assert.Equal(t, "ask_user_question was cancelled by the user", r.err.Error())
	case <-time.After(WaitFor):
		t.Fatal("decline not delivered")
	}
	resp, _ = h.Await("7")
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}`, string(resp))
}
