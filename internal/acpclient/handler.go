package acpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// JSON-RPC and ACP error codes a client answers with.
const (
	CodeInvalidParams    = -32602
	CodeMethodNotFound   = -32601
	CodeInternalError    = -32603
	CodeResourceNotFound = -32002
)

// Error is a JSON-RPC error object, as received or as answered.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error implements error.
func (e *Error) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("rpc error %d: %s %s", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message)
}

// Request is a request the agent sent the client.
type Request struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// A Handler answers one agent→client request with a result (encoded as
// JSON) or an error (an *Error is answered as is, any other error as an
// internal error). Handlers run on the read loop, one at a time in wire
// order; one that must block returns a Deferred. ctx ends when the agent's
// output ends.
type Handler func(ctx context.Context, req Request) (any, error)

// Deferred, returned as a Handler's result, is run in a goroutine of its
// own and its result answers the request, so the read loop goes on
// (terminal/wait_for_exit blocks until its command exits).
type Deferred func() (any, error)

// NoReply, returned as a Handler's result, leaves the request unanswered.
var NoReply any = noReply{}

type noReply struct{}

// answer serves one agent request on the read loop.
func (c *Conn) answer(req Request) {
	h := c.handler(req.Method)
	var res any
	var err error
	if h == nil {
		err = &Error{Code: CodeMethodNotFound, Message: "Method not found: " + req.Method}
	} else {
		res, err = h(c.ctx, req)
	}
	if d, ok := res.(Deferred); ok && err == nil {
		go func() {
			res, err := d()
			c.reply(req.ID, res, err)
		}()
		return
	}
	if _, ok := res.(noReply); ok && err == nil {
		return
	}
	c.reply(req.ID, res, err)
}

func (c *Conn) handler(method string) Handler {
	if h, ok := c.opts.Handlers[method]; ok {
		return h
	}
	if h := c.opts.FS.handler(method); h != nil {
		return h
	}
	if h := c.opts.Terminals.handler(method); h != nil {
		return h
	}
	return c.opts.Fallback
}

// reply answers the request id with res or err.
func (c *Conn) reply(id json.RawMessage, res any, err error) {
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: CodeInternalError, Message: err.Error()}
		}
		_ = c.Send(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *Error          `json:"error"`
		}{"2.0", id, e})
		return
	}
	if res == nil {
		res = struct{}{}
	}
	_ = c.Send(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, res})
}

// PermissionOption is one option of a session/request_permission.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// PermissionRequest is the params of a session/request_permission.
type PermissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  json.RawMessage    `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

// Option returns the id of the first offered option of kind ("" if none).
func (p PermissionRequest) Option(kind string) string {
	for _, o := range p.Options {
		if o.Kind == kind {
			return o.OptionID
		}
	}
	return ""
}

// Selected is the result that selects optionID; an empty id answers
// cancelled.
func Selected(optionID string) any {
	if optionID == "" {
		return map[string]any{"outcome": map[string]string{"outcome": "cancelled"}}
	}
	return map[string]any{"outcome": map[string]string{"outcome": "selected", "optionId": optionID}}
}

// Permissions answers session/request_permission with choose's option id
// ("" answers cancelled).
func Permissions(choose func(PermissionRequest) string) Handler {
	return func(_ context.Context, req Request) (any, error) {
		var p PermissionRequest
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, &Error{Code: CodeInvalidParams, Message: err.Error()}
		}
		return Selected(choose(p)), nil
	}
}

// PreferKinds answers every permission request with the first offered
// option of the first kind listed that is offered (cancelled if none):
// PreferKinds("allow_once") allows once, as an editor user clicking
// "Allow" does.
func PreferKinds(kinds ...string) Handler {
	return Permissions(func(p PermissionRequest) string {
		for _, k := range kinds {
			if id := p.Option(k); id != "" {
				return id
			}
		}
		return ""
	})
}

// PermissionScript answers permission requests with scripted option kinds,
// one per request in order; past the script (or when the kind is not
// offered) it answers cancelled.
type PermissionScript struct {
	mu     sync.Mutex
	kinds  []string
	asked  []PermissionRequest
	misses []error
}

// NewPermissionScript scripts the answers' kinds.
func NewPermissionScript(kinds ...string) *PermissionScript {
	return &PermissionScript{kinds: kinds}
}

// Handler is the script's session/request_permission handler.
func (s *PermissionScript) Handler() Handler {
	return Permissions(func(p PermissionRequest) string {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.asked = append(s.asked, p)
		if len(s.kinds) == 0 {
			return ""
		}
		want := s.kinds[0]
		s.kinds = s.kinds[1:]
		id := p.Option(want)
		if id == "" {
			s.misses = append(s.misses, fmt.Errorf("no offered permission option has kind %q", want))
		}
		return id
	})
}

// Asked returns the permission requests answered so far.
func (s *PermissionScript) Asked() []PermissionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]PermissionRequest(nil), s.asked...)
}

// Err reports the scripted kinds that were not offered.
func (s *PermissionScript) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.misses...)
}

// ElicitCancel answers every elicitation/create with the cancel action.
func ElicitCancel(context.Context, Request) (any, error) {
	return map[string]string{"action": "cancel"}, nil
}

// ElicitAccept answers every elicitation/create by accepting with content.
func ElicitAccept(content any) Handler {
	return func(context.Context, Request) (any, error) {
		return map[string]any{"action": "accept", "content": content}, nil
	}
}
