package acp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
)

// Method is an ACP method name.
type Method string

// The methods a client calls, and the notification it sends.
const (
	MethodInitialize      Method = "initialize"
	MethodAuthenticate    Method = "authenticate"
	MethodLogout          Method = "logout"
	MethodSessionNew      Method = "session/new"
	MethodSessionLoad     Method = "session/load"
	MethodSessionPrompt   Method = "session/prompt"
	MethodSetConfigOption Method = "session/set_config_option"
	MethodSetMode         Method = "session/set_mode"
	MethodSessionList     Method = "session/list"
	MethodSessionResume   Method = "session/resume"
	MethodSessionClose    Method = "session/close"
	MethodSessionDelete   Method = "session/delete"
	MethodSessionCancel   Method = "session/cancel"
)

// The methods the agent calls on the client, and the notification it
// sends.
const (
	MethodSessionUpdate     Method = "session/update"
	MethodRequestPermission Method = "session/request_permission"
	MethodReadTextFile      Method = "fs/read_text_file"
	MethodWriteTextFile     Method = "fs/write_text_file"
	MethodElicitationCreate Method = "elicitation/create"
	MethodTerminalCreate    Method = "terminal/create"
	MethodTerminalOutput    Method = "terminal/output"
	MethodTerminalWait      Method = "terminal/wait_for_exit"
	MethodTerminalKill      Method = "terminal/kill"
	MethodTerminalRelease   Method = "terminal/release"
)

// request is one inbound request as its handler sees it.
type request struct {
	id     RequestID
	method Method
	params json.RawMessage
	after  func()
}

// afterReply makes f run once the response to r is written (and only if
// it answers with a result): work that must follow the response naming a
// session, such as its first notifications.
func (r *request) afterReply(f func()) { r.after = f }

// handler answers a request with a result or an error; errDeferred says
// the handler answers later itself (session/prompt, session/load).
type handler func(ctx context.Context, r *request) (any, error)

// errDeferred marks a request answered later (session/prompt, session/load).
var errDeferred = errors.New("answer deferred")

// methodTable is the server's dispatch table: the methods this bridge
// answers, which its options decide once; any other is method not found.
func (s *Server) methodTable() map[Method]handler {
	t := map[Method]handler{
		MethodInitialize: func(ctx context.Context, r *request) (any, error) {
			r.afterReply(s.initialized)
			return s.initialize(ctx, r.params)
		},
		MethodAuthenticate:    withParams(s.authenticate),
		MethodSessionNew:      s.newSession,
		MethodSessionLoad:     func(ctx context.Context, r *request) (any, error) { return s.loadSession(ctx, r.id, r.params) },
		MethodSessionPrompt:   s.prompt,
		MethodSetConfigOption: withParams(s.setConfigOption),
		MethodSetMode:         withParams(s.setMode),
	}
	if s.opts.EnvAuth != nil && s.opts.EnvAuth.Logout != nil {
		t[MethodLogout] = withParams(s.logout)
	}
	if s.opts.ListSessions {
		t[MethodSessionList] = withParams(s.listSessions)
	}
	if s.opts.Lifecycle {
		t[MethodSessionResume] = func(ctx context.Context, r *request) (any, error) { return s.reopen(ctx, r.id, r.params, false) }
		t[MethodSessionClose] = s.closeSession
		t[MethodSessionDelete] = withParams(s.deleteSession)
	}
	return t
}

// withParams adapts a handler that needs only the request's params.
func withParams(h func(ctx context.Context, params json.RawMessage) (any, error)) handler {
	return func(ctx context.Context, r *request) (any, error) { return h(ctx, r.params) }
}

// handle answers one request; it runs in the read loop.
func (s *Server) handle(ctx context.Context, id RequestID, method string, params json.RawMessage) {
	r := &request{id: id, method: Method(method), params: params}
	h, ok := s.methods[r.method]
	if !ok {
		s.answer(id, nil, methodNotFound(method))
		return
	}
	result, err := h(ctx, r)
	if errors.Is(err, errDeferred) {
		return
	}
	s.answer(id, result, err)
	if err == nil && r.after != nil {
		r.after()
	}
}

// handleNotification handles one notification; it runs in the read loop.
func (s *Server) handleNotification(_ context.Context, method string, params json.RawMessage) {
	switch Method(method) {
	case MethodSessionCancel:
		s.cancel(params)
	default:
		if !strings.HasPrefix(method, "_") {
			s.log.Debug().Str("method", method).Msg("ignored notification")
		}
	}
}

// withSession is the prelude of every request that touches the bridge's
// sessions. Under the bridge's lock, a bridge in teardown refuses it
// (errDisposed); otherwise check (when not nil) judges what the bridge
// holds of session id — ls is nil when the session is not live, loading
// says a session/load or session/resume of it is under way — and does
// what must happen under the same lock. check's error is the request's.
func (s *Server) withSession(id string, check func(ls *binding, loading bool) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errDisposed()
	}
	if check == nil {
		return nil
	}
	return check(s.sessions[id], s.loading[id])
}

// serving is the prelude of a request that changes the bridge's state
// without naming a session: errDisposed once teardown began.
func (s *Server) serving() error { return s.withSession("", nil) }

// lookup returns a live session or the unknown-session error.
func (s *Server) lookup(id string) (*binding, error) {
	var out *binding
	err := s.withSession(id, func(ls *binding, _ bool) error {
		if ls == nil {
			return unknownSession(id)
		}
		out = ls
		return nil
	})
	return out, err
}

// live returns a live session, nil when there is none by that id (for
// the work that follows a response, which nothing refuses).
func (s *Server) live(id string) *binding {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}
