package acp

// This file holds the wire harness and the in-memory fake agent every test
// of the package uses (exported so the external acp_test package can use
// them too: composition imports acp, so the tests that drive a composed
// runtime live there), and the framing tests (acp-bridge § 1).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

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
	// ResumeErr fails session/load of a stored session.
	ResumeErr error
	// Discard makes Prompt only record the text and end completed, logging
	// nothing (to measure the wire alone).
	Discard bool
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
	_ Agent  = (*FakeAgent)(nil)
	_ Served = (*FakeSession)(nil)
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
func (a *FakeAgent) NewSession(_ context.Context, o agent.SessionOptions) (Served, error) {
	cwd := o.Cwd
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
// ListSessions implements Agent: the headers of the stored sessions.
func (a *FakeAgent) ListSessions(ctx context.Context) ([]session.Header, error) {
	var out []session.Header
	for _, s := range a.Sessions() {
		out = append(out, s.Log().Header())
	}
	return out, nil
}

// SessionTitle implements Agent: fakes have no titles.
func (a *FakeAgent) SessionTitle(context.Context, string) string { return "" }

func (a *FakeAgent) LookupSession(_ context.Context, id string) (session.Header, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.headers[id]
	if !ok {
		return session.Header{}, fmt.Errorf("session %q not found%w", id, errFakeNotFound)
	}
	return h, nil
}

// ResumeSession implements Agent.
func (a *FakeAgent) ResumeSession(_ context.Context, id string, _ agent.SessionOptions) (Served, error) {
	a.mu.Lock()
	h, ok := a.headers[id]
	evs := a.stored[id]
	a.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("session %q not found%w", id, errFakeNotFound)
	}
	if a.ResumeErr != nil {
		return nil, a.ResumeErr
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

// errFakeNotFound wraps session.ErrNotFound without adding to the message
// (`session "<id>" not found`, as the stores word it).
var errFakeNotFound = emptyWrap{session.ErrNotFound}

type emptyWrap struct{ err error }

func (emptyWrap) Error() string   { return "" }
func (e emptyWrap) Unwrap() error { return e.err }

// ID implements Session.
func (s *FakeSession) ID() string { return s.log.Header().ID }

// Log implements Session.
func (s *FakeSession) Log() *session.Log { return s.log }

func (s *FakeSession) Host() *capabilities.Host { return nil }

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
func (s *FakeSession) SetKnob(id, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.knobs[id]; !ok {
		return &agent.UnknownKnobError{ID: id}
	}
	s.knobs[id] = value
	s.journal = append(s.journal, "knob:"+id+"="+value)
	return nil
}

// Knobs implements Session: the built-in knobs (FakeAgent.Knobs says
// which of them a session has).
func (s *FakeSession) Knobs() []agent.Knob { return agent.BuiltinKnobs() }

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
// Interrupt implements Session: running turns end disposed, without
// waiting for them.
func (s *FakeSession) Interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, c := range s.active {
		c(errFakeDisposed)
	}
}

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
	if s.agent.Discard {
		return s.finish(session.EndReason{Kind: session.EndCompleted})
	}
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
	if i := strings.Index(text, "#end="); i >= 0 && len(strings.Fields(text[i+len("#end="):])) > 0 {
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
// Ready implements Session (the fake has nothing to ready).
func (s *FakeSession) Ready() {}

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
