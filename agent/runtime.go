// Package agent runs conversations: sessions, turns and steps, request
// derivation from the log, tool dispatch and cancellation.
package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
)

// Config is everything a Runtime needs; clock, ids and the model are
// injected so replay is deterministic.
type Config struct {
	// Model is the model id recorded in request headers.
	Model string
	// Provider streams model calls.
	Provider llm.Provider
	// Store persists logs (nil: memory only).
	Store session.Store
	// Clock stamps events.
	Clock session.Clock
	// NewID returns fresh session ids (UUID v4).
	NewID func() string
	// Tools builds the tool registry for a session.
	Tools func(env capabilities.Env) *capabilities.Registry
	// Sections are the composition's prompt sections (persona etc.); tool
	// sections are added from tools implementing Sectioner.
	Sections []Section
	// Log receives diagnostics (stderr).
	Log zerolog.Logger
	// SandboxDefault is the default sandbox mode when bash commands are
	// confined ("" = no sandbox-mode knob).
	SandboxDefault sandbox.Mode
	// NetworkDefault is the default of the Network knob, NetworkOff or
	// NetworkOn ("" = no Network knob: commands keep the network).
	NetworkDefault string
	// Approval is the approval service (nil = none composed).
	Approval *approval.Service
	// Modes are the configured session modes besides default (nil = the
	// mode service is not composed).
	Modes []ModeDef
	// Commands are the slash commands the agent handles itself.
	Commands []Command
	// ParallelReads runs consecutive calls of one step to tools that say
	// they only read (capabilities.Traits.ReadOnly) concurrently, results
	// logged in call order; off, every call runs on its own, as upstream.
	ParallelReads bool
	// RetryEmpty asks the model once more when a step's answer is empty.
	RetryEmpty bool
	// NoticeDroppedCalls tells the user when an answer cut at max tokens
	// dropped a tool call.
	NoticeDroppedCalls bool
	// Compaction summarises the older conversation when the context use
	// passes its threshold (nil: never; /compact calls Session.Compact).
	Compaction *Compaction
	// ModelKnobs gives each session a model and a thinking knob (logged
	// model/set and model/thinking events); off, every request names
	// Model.
	ModelKnobs bool
	// ToolModeKnob gives each session a tool-mode knob (native, code or
	// both; logged tools/mode events), read by the composition's tools
	// through Session.Knob.
	ToolModeKnob bool
	// Knobs are the per-session knobs the runtime knows, in anchoring
	// order (nil: BuiltinKnobs). Each says whether a composition offers it
	// (Knob.Default); adding one is one value here: the session logs,
	// folds, anchors and restores it, and the ACP bridge offers and
	// validates it, from that value alone.
	Knobs []Knob
	// Delegation bounds the child agents of each session tree (zero: no
	// bounds, as upstream).
	Delegation Delegation
	// MaxChildDepth caps how deep child agents nest (a session is depth
	// 0, its children 1, …); zero means no cap, as upstream.
	MaxChildDepth int
	// DurableKnobs records a knob or mode switch made while idle as a
	// knob/pending event at once (flushed before the switch is
	// acknowledged), so it survives a restart or crash before the next
	// turn anchors it. Upstream compositions leave it off: their contract
	// holds such switches in memory only.
	DurableKnobs bool
	// MaxToolArgBytes caps the streamed arguments of one tool call; zero
	// means DefaultMaxToolArgBytes. A call past it does not run: its
	// result says so, and the model call is cut there.
	MaxToolArgBytes int
	// MaxSteps caps the model calls of one turn; zero means
	// DefaultMaxSteps. A turn that reaches it ends with an error
	// (CodeStepLimit) instead of calling the model again.
	MaxSteps int
	// ReleaseIdle returns freed heap to the system once no turn has run
	// for this long (debug.FreeOSMemory after the last turn; zero: the
	// runtime's gradual scavenging alone).
	ReleaseIdle time.Duration
	// CheckDerivation compares, at every step, the request state the
	// session keeps current as its log grows (history, header, folds)
	// with a full re-derivation from the log; a difference ends the turn
	// with CodeInvalidHistory. The replay harness turns it on, so every
	// recorded scenario proves the incremental derivation.
	CheckDerivation bool
	// OnClose, when set, runs once as the runtime closes, after its own
	// background work has stopped: the release of what its builder made
	// for the sessions and owns with it (the program worker pool).
	OnClose func()
	// Members returns the composition's turn-pipeline members for a
	// session (hook bridges, the repeat guard), in registration order.
	// They stand behind the runtime's own members (mode service, knob
	// anchoring, background-task notices, approval narrator); see
	// package pipeline.
	Members func(s pipeline.Conversation) []any
}

// DefaultMaxSteps is the step cap of a turn when Config.MaxSteps is zero.
const DefaultMaxSteps = 100

// DefaultMaxToolArgBytes is the cap on one tool call's streamed arguments
// when Config.MaxToolArgBytes is zero.
const DefaultMaxToolArgBytes = 8 << 20

// maxToolArgBytes is the effective argument cap.
func (r *Runtime) maxToolArgBytes() int {
	if r.cfg.MaxToolArgBytes > 0 {
		return r.cfg.MaxToolArgBytes
	}
	return DefaultMaxToolArgBytes
}

// Codes of turns that the loop itself ends with an error.
const (
	// CodeStepLimit ends a turn that reached Config.MaxSteps.
	CodeStepLimit = "STEP_LIMIT"
	// CodeInvalidHistory ends a turn, before its model call, whose derived
	// history is not a valid chat sequence after the derivation repaired
	// what it could, or (Config.CheckDerivation) differs from a full
	// re-derivation of the log: a bug either way.
	CodeInvalidHistory = "INVALID_HISTORY"
)

// maxSteps is the effective step cap.
func (r *Runtime) maxSteps() int {
	if r.cfg.MaxSteps > 0 {
		return r.cfg.MaxSteps
	}
	return DefaultMaxSteps
}

// Runtime creates and resumes sessions. It implements acp.Agent.
type Runtime struct {
	cfg      Config
	children liveChildren // live child agents, for RootOf
	idle     *idleRelease // nil without Config.ReleaseIdle

	mu     sync.Mutex         // guards warmed, and orders Warm's start against Close
	ctx    context.Context    // the background work's, until Close
	stop   context.CancelFunc // ends the background work (Warm's)
	bg     sync.WaitGroup     // that work
	warmed bool               // Warm has started the background work
	closed sync.Once          // runs Config.OnClose
}

// NewRuntime returns a runtime for cfg. It starts no background work:
// Warm does, and Close stops it.
func NewRuntime(cfg Config) *Runtime {
	if cfg.Tools == nil {
		cfg.Tools = func(capabilities.Env) *capabilities.Registry { return capabilities.NewRegistry() }
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Runtime{cfg: cfg, idle: newIdleRelease(cfg.ReleaseIdle), ctx: ctx, stop: stop}
}

// Warm starts, once and in the background, what makes the first prompt
// fast: the provider opening its connection ahead of use (a live API: the
// TCP and TLS handshakes) and the prewarm of the first-prompt code paths.
// NewRuntime does not start them, so that they do not compete with
// answering initialize: the server calls Warm once that answer is
// written, and the first NewSession or ResumeSession calls it too. After
// Close it does nothing.
func (r *Runtime) Warm() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.warmed || r.ctx.Err() != nil {
		return
	}
	r.warmed = true
	if w, ok := r.cfg.Provider.(warmer); ok {
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			w.Warm(r.ctx)
		}()
	}
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		r.prewarm(r.ctx)
	}()
}

// Close stops the runtime's own background work (the provider's warm-up,
// the prewarm, a pending idle release) and waits for it to end. Sessions
// are closed on their own (Session.Close), before it; the runtime is not
// used after. Later calls do nothing.
func (r *Runtime) Close() {
	// Under mu, so that a Warm running now either has added its work to
	// bg or sees the runtime stopped.
	r.mu.Lock()
	r.stop()
	r.mu.Unlock()
	r.bg.Wait()
	r.idle.stop()
	r.closed.Do(func() {
		if r.cfg.OnClose != nil {
			r.cfg.OnClose()
		}
	})
}

// prewarm runs the first-prompt code paths once on a throwaway session in
// the background (prompt assembly, tool schemas, event encodings), so the
// user's first prompt does not pay for cold caches.
func (r *Runtime) prewarm(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	log := session.NewLog(session.Header{ID: "prewarm", Cwd: "/"}, func() int64 { return 0 }, nil)
	s := r.open(log, false, nil, nil)
	log.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: session.TriggerMessage, Source: session.UserSource}})
	log.Append(session.TypeUserMessage, session.Message{Content: []session.Block{session.TextBlock("warm")}, Source: session.UserSource})
	log.Append(session.TypeStepStart, session.StepRef{Turn: 1, Step: 1})
	hdr := s.header()
	events := log.Events()
	prev, found := foldHeader(events)
	typ, data := headerEventFor(prev, found, hdr, true)
	log.Append(typ, data)
	log.Append(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Content: []session.Block{session.TextBlock("ok")}})
	_ = deriveMessages(log.Events())
	for _, e := range log.Events() {
		_, _ = e.MarshalJSON()
	}
}

// NewSession starts an empty session rooted at o.Cwd, with o's extra roots
// and host. Its log file appears with its first event.
func (r *Runtime) NewSession(_ context.Context, o SessionOptions) (*Session, error) {
	r.Warm()
	h := session.Header{ID: r.cfg.NewID(), CreatedAt: r.cfg.Clock(), Cwd: o.Cwd}
	log := session.NewLog(h, r.cfg.Clock, r.cfg.Store)
	roots := recordRoots(log, o)
	s := r.open(log, true, o.clientHost(h.ID), roots)
	s.onSpawn = o.OnSpawn
	s.fresh = true
	s.start("startup")
	return s, nil
}

// Ready readies a new session's first write in the background (the
// store's lookup, directory and lock: session.Preparer), off the path
// between the first prompt and the first model request; Close waits for
// it. The bridge calls it once the session/new answer is out, so this
// work never delays that answer either. Later calls, and calls on a
// loaded session, do nothing.
func (s *Session) Ready() {
	p, ok := s.rt.cfg.Store.(session.Preparer)
	s.mu.Lock()
	fresh := s.fresh && !s.disposed
	s.fresh = false
	if fresh && ok {
		s.bg.Add(1)
	}
	s.mu.Unlock()
	if !fresh || !ok {
		return
	}
	h := s.log.Header()
	go func() {
		defer s.bg.Done()
		if err := p.Prepare(context.Background(), h); err != nil {
			s.rt.cfg.Log.Debug().Err(err).Str("session", h.ID).Msg("prepare the session's first write")
		}
	}()
}

// LookupSession returns a stored session's header: from the store's
// index when it keeps one (the other sessions are not read), else by
// listing them.
func (r *Runtime) LookupSession(ctx context.Context, id string) (session.Header, error) {
	if r.cfg.Store == nil {
		return session.Header{}, fmt.Errorf("session %q not found: %w", id, session.ErrNotFound)
	}
	if x, ok := r.cfg.Store.(session.Indexer); ok {
		sm, err := x.Lookup(ctx, id)
		if err != nil {
			return session.Header{}, err
		}
		return sm.Header, nil
	}
	hs, err := r.cfg.Store.List(ctx)
	if err != nil {
		return session.Header{}, err
	}
	for _, h := range hs {
		if h.ID == id {
			return h, nil
		}
	}
	return session.Header{}, fmt.Errorf("session %q not found: %w", id, session.ErrNotFound)
}

// ListSessions returns the headers of the stored top-level sessions.
func (r *Runtime) ListSessions(ctx context.Context) ([]session.Header, error) {
	if r.cfg.Store == nil {
		return nil, nil
	}
	hs, err := r.cfg.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	// Child sessions (subagents, workflow children) are not conversations
	// of their own: they are reached through their parent's tool cards.
	top := hs[:0]
	for _, h := range hs {
		if h.ParentSession == "" {
			top = append(top, h)
		}
	}
	return top, nil
}

// SessionTitle names a stored session by its first user message ("" when
// the store cannot tell cheaply).
func (r *Runtime) SessionTitle(ctx context.Context, id string) string {
	t, ok := r.cfg.Store.(session.Titler)
	if !ok {
		return ""
	}
	title, err := t.Title(ctx, id)
	if err != nil {
		return ""
	}
	return title
}

// ResumeSession loads a stored session (crash repair has been applied by
// the store) with o's host; it keeps its recorded roots and adds o's.
func (r *Runtime) ResumeSession(ctx context.Context, id string, o SessionOptions) (*Session, error) {
	r.Warm()
	if r.cfg.Store == nil {
		return nil, errors.New("no session store is configured")
	}
	h, events, err := r.cfg.Store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	log := session.ResumeLog(h, events, r.cfg.Clock, r.cfg.Store)
	roots := recordRoots(log, o)
	s := r.open(log, true, o.clientHost(id), roots)
	s.onSpawn = o.OnSpawn
	s.start("resume")
	return s, nil
}

// warmer is a provider that can open its connection ahead of use.
type warmer interface {
	Warm(ctx context.Context)
}

// open makes a live session over log, hosted by client (nil: all local)
// with roots beyond its cwd; composed members join its pipeline unless the
// session is the throwaway prewarm one.
func (r *Runtime) open(log *session.Log, composed bool, client *capabilities.Host, roots []string) *Session {
	s := r.build(log, composed, nil, client, roots, capabilities.ChildOptions{})
	if composed {
		s.family = &family{limits: r.cfg.Delegation, root: s}
	}
	return s
}

// openChild opens a child of parent with the child's options: its model,
// its extra tools (after the registry's) and its extra pipeline members
// (after the composition's); the parent's inheritable members replace the
// child's fresh ones.
func (r *Runtime) openChild(log *session.Log, parent *Session, client *capabilities.Host, roots []string, o capabilities.ChildOptions) *Session {
	return r.build(log, true, parent, client, roots, o)
}

// build makes a session over log (a child of parent when parent is set).
func (r *Runtime) build(log *session.Log, composed bool, parent *Session, client *capabilities.Host, roots []string, o capabilities.ChildOptions) *Session {
	s := &Session{rt: r, log: log, model: o.Model, parent: parent}
	if parent != nil {
		s.family = parent.family
	}
	s.host = s.hostFor(client, roots)
	s.tools = r.cfg.Tools(s)
	if len(o.Extra) > 0 {
		s.tools = s.tools.With(o.Extra...)
	}
	s.host.Tools = s.tools
	s.restorePending(log.Events())
	members := s.builtinMembers()
	if composed && r.cfg.Members != nil {
		s.composed = r.cfg.Members(s)
		if parent != nil {
			s.composed = inheritMembers(parent, s, s.composed)
		}
		members = append(members, s.composed...)
	}
	members = append(members, o.Members...)
	p, err := pipeline.New(r.cfg.Log, members...)
	if err != nil {
		r.cfg.Log.Error().Err(err).Str("session", s.ID()).Msg("turn pipeline: the composition's members are left out")
		p, _ = pipeline.New(r.cfg.Log, s.builtinMembers()...)
	}
	s.pipe = p
	return s
}

// Session is one live conversation. Turns run one at a time.
type Session struct {
	rt    *Runtime
	log   *session.Log
	tools *capabilities.Registry
	model string             // a child's model override ("" = the runtime's)
	host  *capabilities.Host // what the editor hosts, the roots, the session's services
	fresh bool               // new, and its first write not prepared yet (Ready)
	// watcher is the parent's pipeline when it watches its children
	// (SubagentStop runs on it when this child closes).
	watcher *pipeline.Pipeline
	depth   int // 0 for a top-level session, parent's + 1 for a child
	// parent is the session that spawned this child (nil: top level).
	parent *Session
	// family is the session tree's delegation state (shared with the
	// root; nil for the throwaway prewarm session).
	family *family
	// composed are the composition's members of this session (a child's
	// with its parent's Inheritable ones in place).
	composed []any
	// onSpawn is told of every child (SessionOptions.OnSpawn; children
	// inherit it).
	onSpawn func(parent, child *Session, title string)

	turnMu sync.Mutex // held for a whole turn

	mu          sync.Mutex
	cancel      context.CancelFunc // aborts the running turn
	abortReason string
	tickets     int    // prompts accepted so far; each Prompt takes the next number
	dropUpTo    int    // prompts with a ticket up to this one were queued when a cancel came
	dropReason  string // that cancel's reason
	disposed    bool
	released    bool              // a child's close was counted (closedChild)
	headerSent  bool              // this loop instance has logged its first header
	pending     map[string]string // held knob switches, anchored at the next turn
	pendingMode string            // a mode switch waiting for the next flush point
	inTurn      bool              // a prompt's turn is open (guards Inject)
	injected    []session.Message // context injected during the turn, appended at the next step boundary

	knobMu   sync.Mutex
	knobSeen map[string]knobSeen // each knob's value as last decoded (loggedKnob)

	req      derived            // the request state derived from the log (derive)
	pipe     *pipeline.Pipeline // the turn pipeline: built-in members, then the composition's
	steering []pipeline.Context // forced-continuation reasons, appended before the next step
	bgStop   context.CancelFunc // stops detached session-start work
	bg       sync.WaitGroup     // detached session-start work in flight
}

// ID returns the session id.
func (s *Session) ID() string { return s.log.Header().ID }

// Cwd returns the session's working directory.
func (s *Session) Cwd() string { return s.log.Header().Cwd }

// Log returns the session's event log.
func (s *Session) Log() *session.Log { return s.log }

// Host returns what the session's host supplies and what the session
// offers its tools (capabilities.Host); never nil.
func (s *Session) Host() *capabilities.Host { return s.host }

// Tools returns the session's tool registry.
func (s *Session) Tools() *capabilities.Registry { return s.tools }

// Cancel aborts the running turn with reason.
func (s *Session) Cancel(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil && s.abortReason == "" {
		s.abortReason = reason
		s.cancel()
	}
	// Every prompt accepted so far and still waiting is dropped; the
	// running one (if any) has already passed its check.
	s.dropUpTo, s.dropReason = s.tickets, reason
}

// Interrupt marks the session disposed without waiting: a running turn is
// aborted and ends "disposed", and later prompts are refused.
func (s *Session) Interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disposed = true
	if s.bgStop != nil {
		s.bgStop()
	}
	if s.cancel != nil && s.abortReason == "" {
		s.abortReason = "disposed"
		s.cancel()
	}
}

// Close disposes the session: a running turn ends "disposed"; the log is
// flushed and the store's hold on the session released.
func (s *Session) Close(ctx context.Context) error {
	s.Interrupt()
	s.bg.Wait()
	s.turnMu.Lock()
	defer s.turnMu.Unlock()
	if w := s.watcher; w != nil {
		s.watcher = nil
		w.StopSubagent(context.WithoutCancel(ctx), s)
	}
	s.closedChild()
	return errors.Join(s.tools.Close(ctx), s.log.Close(ctx))
}

// system renders the session's system prompt.
func (s *Session) system() string {
	secs := append([]Section{IdentitySection()}, s.rt.cfg.Sections...)
	for _, t := range s.tools.Tools() {
		if sc, ok := t.(capabilities.Sectioner); ok && (!t.Traits().Program || s.offered(t)) {
			secs = append(secs, sc.PromptSection())
		}
	}
	secs = append(secs, s.tools.Sections()...)
	if sec, ok := s.approvalSection(); ok {
		secs = append(secs, sec)
	}
	if sec, ok := s.modeSection(); ok {
		secs = append(secs, sec)
	}
	return renderSystem(secs, s.modelID(), s.Cwd())
}

// header builds the request header for the next step.
func (s *Session) header() Header {
	h := Header{Config: s.requestConfig(), System: s.system()}
	mode := s.LoggedMode()
	for _, t := range s.tools.Tools() { // already in wire order
		if !s.rt.offeredIn(mode, t) || !s.offered(t) {
			continue
		}
		params, _ := t.Schema().MarshalJSON()
		h.Tools = append(h.Tools, llm.ToolSchema{Name: t.Name(), Description: t.Description(), Parameters: params})
	}
	return h
}
