package acp

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// SessionIDRequest is the params of session/close and session/delete.
type SessionIDRequest struct {
	SessionID string `json:"sessionId"`
}

// sessionDeleter is an Agent that can remove stored sessions.
type sessionDeleter interface {
	DeleteSession(ctx context.Context, id string) error
}

// sessionSummarizer is an Agent that can tell when stored sessions were
// last written.
type sessionSummarizer interface {
	SessionSummaries(ctx context.Context) ([]session.Summary, error)
}

// lifecycleCapabilities adds what Options.Lifecycle answers to sc.
func (s *Server) lifecycleCapabilities(sc *SessionCapabilities) *SessionCapabilities {
	if !s.opts.Lifecycle {
		return sc
	}
	if sc == nil {
		sc = &SessionCapabilities{}
	}
	sc.Delete, sc.Resume, sc.Close = &struct{}{}, &struct{}{}, &struct{}{}
	return sc
}

// closeSession handles session/close: the session's running turn is
// cancelled (its prompt answers cancelled), then the session is disposed —
// its tasks, MCP servers and other tool resources stop, its log is flushed
// and the store's hold released — and the bridge forgets it. The answer
// follows once all of that is done.
func (s *Server) closeSession(ctx context.Context, r *request) (any, error) {
	var req SessionIDRequest
	if err := decode(r.params, &req); err != nil {
		return nil, err
	}
	var (
		ls *binding
		p  *inflight
	)
	if err := s.withSession(req.SessionID, func(l *binding, loading bool) error {
		switch {
		case loading:
			return invalidParams("session %s is still loading; close it once it has loaded", req.SessionID)
		case l == nil:
			return unknownSession(req.SessionID)
		}
		delete(s.sessions, req.SessionID)
		ls, p = l, l.prompt
		if p != nil {
			p.cancelled = true
		}
		s.work.Add(1)
		return nil
	}); err != nil {
		return nil, err
	}

	go func() {
		defer s.work.Done()
		ls.s.Cancel(string(MethodSessionClose))
		if p != nil {
			p.cancel(errCancelled)
		}
		s.dispose(context.WithoutCancel(ctx), ls.s)
		if p != nil {
			// Every update of the turn is written (dispose waited for
			// it): the prompt answers now, unless it already has.
			s.settle(ls, p, func() { s.answer(p.id, PromptResponse{StopCancelled}, nil) })
		}
		if ls.unsub != nil {
			ls.unsub()
		}
		s.answer(r.id, struct{}{}, nil)
	}()
	return nil, errDeferred
}

// deleteSession handles session/delete: the stored session (and its
// child sessions) is removed. A session open in this connection, or held
// by another process, is refused and left as it was.
func (s *Server) deleteSession(ctx context.Context, params json.RawMessage) (any, error) {
	var req SessionIDRequest
	if err := decode(params, &req); err != nil {
		return nil, err
	}
	if err := s.withSession(req.SessionID, func(ls *binding, loading bool) error {
		if ls != nil || loading {
			return invalidParams("session %s is open; close it (session/close) before deleting it", req.SessionID)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	d, ok := s.agent.(sessionDeleter)
	if !ok {
		return nil, methodNotFound(string(MethodSessionDelete))
	}
	err := d.DeleteSession(ctx, req.SessionID)
	var held *session.HeldError
	switch {
	case err == nil:
		return struct{}{}, nil
	case errors.As(err, &held):
		who := "another process"
		if h := held.Holder.String(); h != "" {
			who += " (" + h + ")"
		}
		return nil, invalidParams("session %s is open in %s; close it there before deleting it", req.SessionID, who)
	case errors.Is(err, session.ErrNotFound):
		return nil, &Error{Code: CodeResourceNotFound, Message: "Resource not found: no stored session " + req.SessionID,
			Data: jsonx.MustMarshal(struct {
				SessionID string `json:"sessionId"`
			}{req.SessionID})}
	}
	return nil, err
}

// SessionInfoUpdate announces session metadata (its title).
type SessionInfoUpdate struct {
	SessionUpdate UpdateKind `json:"sessionUpdate"`
	Title         string     `json:"title"`
}

// titleOf returns, with Lifecycle, the session_info_update naming a
// session after its first user message (its first line), when ev is that
// message; a session that already had one (a loaded one) gets none.
func (s *Server) titleOf(ls *binding, ev session.Event) (SessionInfoUpdate, bool) {
	if !s.opts.Lifecycle || ev.Type != session.TypeUserMessage {
		return SessionInfoUpdate{}, false
	}
	var m session.Message
	if ev.Decode(&m) != nil || m.Source.Kind != session.UserSource.Kind {
		return SessionInfoUpdate{}, false
	}
	for _, e := range ls.s.Log().Events() {
		if e.Seq >= ev.Seq {
			break
		}
		var earlier session.Message
		if e.Type == session.TypeUserMessage && e.Decode(&earlier) == nil && earlier.Source.Kind == session.UserSource.Kind {
			return SessionInfoUpdate{}, false
		}
	}
	for _, b := range m.Content {
		if b.Type == session.BlockText {
			if t := session.TitleOf(b.Text); t != "" {
				return SessionInfoUpdate{SessionUpdate: UpdateSessionInfo, Title: t}, true
			}
		}
	}
	return SessionInfoUpdate{}, false
}
