package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// checkWorkspace applies session/new's (and session/load's) parameter
// checks in upstream's order.
func (s *Server) checkWorkspace(cwd string, extraDirs []string, mcpServers []json.RawMessage) error {
	if !strings.HasPrefix(cwd, "/") {
		return invalidParams("cwd must be an absolute path: %s", cwd)
	}
	if len(extraDirs) > 0 {
		if !s.opts.ExtraRoots {
			return invalidParams("additionalDirectories is not supported in this MVP")
		}
		if err := checkRoots(extraDirs); err != nil {
			return err
		}
	}
	if len(mcpServers) > 0 {
		if !s.opts.AcceptMCPServers {
			return invalidParams("mcpServers is not supported in this MVP")
		}
		if s.opts.MCP == nil {
			s.log.Info().Int("count", len(mcpServers)).Msg("client MCP servers received; not used")
		}
		return s.checkMCP(mcpServers)
	}
	return nil
}

// checkRoots refuses an additional directory that is not an absolute path
// of an existing directory.
func checkRoots(dirs []string) error {
	for _, d := range dirs {
		if !strings.HasPrefix(d, "/") {
			return invalidParams("additionalDirectories entries must be absolute paths: %s", d)
		}
		fi, err := os.Stat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return invalidParams("additionalDirectories entry does not exist: %s", d)
		case err != nil:
			return invalidParams("additionalDirectories entry cannot be used: %v", err)
		case !fi.IsDir():
			return invalidParams("additionalDirectories entry is not a directory: %s", d)
		}
	}
	return nil
}

// checkCwdExists refuses (with CheckCwd) a cwd that is not an existing
// directory: every tool of the session would fail in it.
func (s *Server) checkCwdExists(cwd string) error {
	if !s.opts.CheckCwd {
		return nil
	}
	fi, err := os.Stat(cwd)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return invalidParams("cwd does not exist: %s", cwd)
	case err != nil:
		return invalidParams("cwd cannot be used: %v", err)
	case !fi.IsDir():
		return invalidParams("cwd is not a directory: %s", cwd)
	}
	return nil
}

// newSession handles session/new.
func (s *Server) newSession(ctx context.Context, r *request) (any, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	var req NewSessionRequest
	if err := decode(r.params, &req); err != nil {
		return nil, err
	}
	if err := s.checkWorkspace(req.Cwd, req.AdditionalDirectories, req.MCPServers); err != nil {
		return nil, err
	}
	if err := s.checkCwdExists(req.Cwd); err != nil {
		return nil, err
	}
	s.mu.Lock()
	authAware := s.authAware
	s.mu.Unlock()
	if authAware {
		// A client that handles auth methods shows how to set the key;
		// others learn it from the first prompt's error.
		if err := s.requireKey(); err != nil {
			return nil, err
		}
	}
	sess, err := s.agent.NewSession(ctx, s.sessionOptions(req.Cwd, req.AdditionalDirectories))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	terminal := s.terminalOutput
	s.mu.Unlock()
	ls, err := s.register(ctx, sess, terminal, nil)
	if err != nil {
		return nil, err
	}
	s.holdMCP(ls, req.MCPServers)
	r.afterReply(func() { s.created(sess.ID()) })
	return NewSessionResponse{SessionID: sess.ID(), ConfigOptions: s.shownOptions(ctx, ls), Modes: s.modeState(sess)}, nil
}

// register makes sess live and starts streaming its events, unless
// teardown began: then the session is disposed and closedErr (nil:
// errDisposed) returned.
func (s *Server) register(ctx context.Context, sess Served, terminal bool, closedErr error) (*binding, error) {
	ls := &binding{s: sess, terminal: terminal, lastMode: sess.Mode()}
	if err := s.withSession(sess.ID(), func(*binding, bool) error {
		s.sessions[sess.ID()] = ls
		return nil
	}); err != nil {
		s.dispose(ctx, sess)
		if closedErr != nil {
			err = closedErr
		}
		return nil, err
	}
	s.attach(ls)
	return ls, nil
}

// attach starts streaming the session's live events to the client.
func (s *Server) attach(ls *binding) {
	p := newPresenter(ls.s.Tools(), ls.s.Log().Header().Cwd, ls.terminal, false)
	p.window = s.opts.ContextWindow
	p.editor = s.opts.EditorCards
	p.live = &ls.live
	p.compaction = s.compactionUpdates()
	id := ls.s.ID()
	knobs := map[string]agent.Knob{} // by event type
	for _, k := range ls.s.Knobs() {
		knobs[k.Event] = k
	}
	ls.unsub = ls.s.Log().Subscribe(func(ev session.Event) {
		if u, ok := s.titleOf(ls, ev); ok {
			s.notify("session/update", SessionNotification{SessionID: id, Update: u})
		}
		for _, u := range p.present(ev) {
			s.notify("session/update", SessionNotification{SessionID: id, Update: u})
			if card, ok := u.(ToolCallCard); ok && s.opts.DetailedPermissions {
				s.keepCard(ls, card)
			}
		}
		switch ev.Type {
		case session.TypeToolResult:
			if s.opts.DetailedPermissions {
				var r session.ToolResult
				if ev.Decode(&r) == nil {
					s.dropCard(ls, r.CallID)
				}
			}
		case session.TypeModeSet:
			var m struct {
				Mode string `json:"mode"`
			}
			if ev.Decode(&m) == nil {
				s.modeChanged(ls, m.Mode)
			}
		default:
			if k, ok := knobs[ev.Type]; ok {
				if v, ok := k.Decode(ev); ok {
					s.optionChanged(ls, k.ID, v)
				}
			}
		}
	})
}

// loadSession handles session/load: checks, resume, replay of the whole log
// as session/update notifications, then the answer.
func (s *Server) loadSession(ctx context.Context, id RequestID, params json.RawMessage) (any, error) {
	return s.reopen(ctx, id, params, true)
}

// reopen serves session/load (replay: the whole log is shown first) and
// session/resume (no replay): the stored session becomes live, answered
// from its own goroutine.
func (s *Server) reopen(ctx context.Context, id RequestID, params json.RawMessage, replay bool) (any, error) {
	var req LoadSessionRequest
	if err := decode(params, &req); err != nil {
		return nil, err
	}
	var terminal bool
	if err := s.withSession(req.SessionID, func(ls *binding, loading bool) error {
		if ls != nil || loading {
			return invalidParams("session %s is already loaded", req.SessionID)
		}
		s.loading[req.SessionID] = true
		terminal = s.terminalOutput
		return nil
	}); err != nil {
		return nil, err
	}

	s.work.Add(1)
	go func() {
		defer s.work.Done()
		result, err := s.resume(ctx, req, terminal, replay)
		s.mu.Lock()
		delete(s.loading, req.SessionID)
		s.mu.Unlock()
		s.answer(id, result, err)
		if err == nil {
			s.connectMCP(req.SessionID)
			s.advertiseCommands(req.SessionID)
		}
	}()
	return nil, errDeferred
}

func (s *Server) resume(ctx context.Context, req LoadSessionRequest, terminal, replay bool) (any, error) {
	if err := s.checkWorkspace(req.Cwd, req.AdditionalDirectories, req.MCPServers); err != nil {
		return nil, err
	}
	h, err := s.agent.LookupSession(ctx, req.SessionID)
	if err == nil {
		if !strings.HasPrefix(h.Cwd, "/") {
			return nil, invalidParams("session %s has no absolute persisted cwd; cannot determine its workspace (it predates per-session cwd, or was created without one)", req.SessionID)
		}
		if path.Clean(h.Cwd) != path.Clean(req.Cwd) {
			return nil, invalidParams("session %s cwd mismatch: persisted %s, requested %s", req.SessionID, h.Cwd, req.Cwd)
		}
	}
	if err := s.checkCwdExists(req.Cwd); err != nil {
		return nil, err
	}
	sess, err := s.agent.ResumeSession(ctx, req.SessionID, s.sessionOptions(req.Cwd, req.AdditionalDirectories))
	if err != nil {
		return nil, s.resumeError(req.SessionID, err)
	}
	if replay {
		p := newPresenter(sess.Tools(), sess.Log().Header().Cwd, terminal, true)
		p.cardOrphans = s.opts.CardUnloggedCalls
		p.window = s.opts.ContextWindow
		p.editor = s.opts.EditorCards
		p.compaction = s.compactionUpdates()
		send := func(u any) { s.notify("session/update", SessionNotification{SessionID: sess.ID(), Update: u}) }
		events, err := sess.Log().All(ctx) // streamed chunks included
		if err != nil {
			s.dispose(ctx, sess)
			return nil, err
		}
		replayLog(p, events, s.opts.MergeReplayChunks, send)
	}
	ls, err := s.register(ctx, sess, terminal, invalidParams("connection closed during session/load"))
	if err != nil {
		return nil, err
	}
	s.holdMCP(ls, req.MCPServers)
	return LoadSessionResponse{ConfigOptions: s.shownOptions(ctx, ls), Modes: s.modeState(sess)}, nil
}

// resumeError maps a failed resume: a session another process holds is
// refused like one already loaded here; an unknown id is, with
// ClearErrors, resource_not_found naming it (upstream: the store's plain
// error, acp-bridge § 4).
func (s *Server) resumeError(id string, err error) error {
	var held *session.HeldError
	switch {
	case errors.As(err, &held):
		who := "another process"
		if h := held.Holder.String(); h != "" {
			who += " (" + h + ")"
		}
		return invalidParams("session %s is already loaded by %s; close it there (or end that process) and load it again", id, who)
	case s.opts.ClearErrors && errors.Is(err, session.ErrNotFound):
		return &Error{Code: CodeResourceNotFound, Message: "Resource not found: no stored session " + id + " (it was deleted, or is stored under another sessions root)",
			Data: jsonx.MustMarshal(struct {
				SessionID string `json:"sessionId"`
			}{id})}
	}
	return err
}

// dispose closes a session and gives up its ownership in the store, so
// another process may load it.
func (s *Server) dispose(ctx context.Context, sess interface {
	Conversation
	Disposer
}) {
	err := sess.Close(ctx)
	if err == nil {
		err = sess.Log().Close(ctx)
	}
	if err != nil {
		s.log.Error().Err(err).Str("session", sess.ID()).Msg("dispose session")
	}
}

// compactionUpdates reports whether sessions show compactions as
// compaction_update (the client advertised session.compaction).
func (s *Server) compactionUpdates() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.compaction
}
