package acp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
)

// PermissionOptionKind tells the client what a permission option does.
type PermissionOptionKind string

// The permission option kinds.
const (
	AllowOnce    PermissionOptionKind = "allow_once"
	AllowAlways  PermissionOptionKind = "allow_always"
	RejectOnce   PermissionOptionKind = "reject_once"
	RejectAlways PermissionOptionKind = "reject_always"
)

// The ids of the options the bridge offers (a question's choices are
// "choice-<n>").
const (
	optionAllowOnce    = "allow-once"
	optionAllowAlways  = "allow-always"
	optionAllowProject = "allow-project"
	optionRejectOnce   = "reject-once"
	// allowPrefix starts the id of every allowing option.
	allowPrefix = "allow-"
)

// PermissionOption is one choice of a permission request.
type PermissionOption struct {
	OptionID string               `json:"optionId"`
	Name     string               `json:"name"`
	Kind     PermissionOptionKind `json:"kind"`
}

// RequestPermissionRequest is the params of session/request_permission.
type RequestPermissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  ToolCallRef        `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

// ToolCallRef points a request at a streamed tool call; with
// Options.DetailedPermissions it also carries what the user needs to
// judge the request (a ToolCallUpdate: title, kind, content, rawInput).
type ToolCallRef struct {
	ToolCallID string                `json:"toolCallId"`
	Title      string                `json:"title,omitempty"`
	Kind       capabilities.ToolKind `json:"kind,omitempty"`
	Status     ToolCallStatus        `json:"status,omitempty"`
	RawInput   json.RawMessage       `json:"rawInput,omitempty"`
	Locations  []Location            `json:"locations,omitempty"`
	Content    []ToolCallContent     `json:"content,omitempty"`
}

// Answer implements approval.Answerer: the bridge asks the editor's user
// for its own top-level sessions' tool calls (acp-bridge § 13). Only the
// allow-once option grants; anything unexpected is conservative.
func (s *Server) Answer(ctx context.Context, sessionID string, req approval.Request) (approval.Outcome, bool, error) {
	if req.CallID == "" {
		return "", false, nil
	}
	child := false
	if s.opts.ChildApprovals {
		if r, ok := s.agent.(childRouter); ok {
			if root, ok := r.RootOf(sessionID); ok {
				// A child agent's request, asked on the session it works
				// for; its call has no card there, so its id is made
				// distinct from the session's own calls.
				sessionID, child = root, true
				req.CallID = "subagent/" + req.CallID
			}
		}
	}
	s.mu.Lock()
	ls := s.sessions[sessionID]
	closed := s.closed
	s.mu.Unlock()
	if ls == nil || closed {
		return "", false, nil
	}
	params := RequestPermissionRequest{SessionID: sessionID, ToolCall: ToolCallRef{ToolCallID: req.CallID}, Options: []PermissionOption{
		{OptionID: optionAllowOnce, Name: "Allow once", Kind: AllowOnce},
	}}
	if s.opts.OfferAllowAlways {
		name := "Always allow in this session"
		if s.opts.DetailedPermissions {
			name = alwaysName(req)
		}
		if child {
			name = forSubagent(name)
		}
		params.Options = append(params.Options, PermissionOption{OptionID: optionAllowAlways, Name: name, Kind: AllowAlways})
	}
	var scope, project string
	if s.opts.DetailedPermissions {
		params.ToolCall = s.permissionCall(ls, req)
		if s.opts.Grants != nil {
			project = ls.s.Log().Header().Cwd
			var name string
			if scope, name = projectScope(req); scope != "" {
				if s.opts.Grants.Granted(project, scope) {
					return approval.AllowedOnce, true, nil
				}
				params.Options = append(params.Options, PermissionOption{OptionID: optionAllowProject, Name: name, Kind: AllowAlways})
			}
		}
	}
	params.Options = append(params.Options, PermissionOption{OptionID: optionRejectOnce, Name: "Reject", Kind: RejectOnce})
	if s.opts.DetailedPermissions && s.hasCard(ls, req.CallID) {
		// The card waits for the user (clients that do not read the
		// request's toolCall see it too).
		s.notify(MethodSessionUpdate, SessionNotification{SessionID: sessionID, Update: StatusUpdate{UpdateToolCallUpdate, req.CallID, StatusPending}})
	}
	out, err := s.requestPermission(ctx, params)
	if err != nil {
		return approval.Unavailable, true, nil
	}
	if s.opts.DetailedPermissions && out.Outcome == outcomeSelected && strings.HasPrefix(out.OptionID, allowPrefix) && s.hasCard(ls, req.CallID) {
		// Allowed: the card runs again.
		s.notify(MethodSessionUpdate, SessionNotification{SessionID: sessionID, Update: StatusUpdate{UpdateToolCallUpdate, req.CallID, StatusInProgress}})
	}
	switch {
	case out.Outcome == outcomeCancelled:
		return approval.Cancelled, true, nil
	case out.Outcome == outcomeSelected && out.OptionID == optionAllowOnce:
		return approval.AllowedOnce, true, nil
	case out.Outcome == outcomeSelected && out.OptionID == optionAllowAlways && s.opts.OfferAllowAlways:
		return approval.AllowedAlways, true, nil
	case out.Outcome == outcomeSelected && out.OptionID == optionAllowProject && scope != "":
		if err := s.opts.Grants.Grant(project, scope); err != nil {
			s.log.Warn().Err(err).Msg("remember a project permission")
		}
		return approval.AllowedOnce, true, nil
	}
	return approval.Rejected, true, nil
}

// forSubagent names an "always" option of a child agent's request: it
// widens that child only, never the session it works for.
func forSubagent(name string) string {
	r := strings.NewReplacer("in this session", "for this subagent", "keep this session at", "keep this subagent at",
		"switches the sandbox", "switches its sandbox")
	if out := r.Replace(name); out != name {
		return out
	}
	return name + " (this subagent only)"
}

// childRouter finds the top-level session a live child agent works for
// (agent.Runtime.RootOf).
type childRouter interface {
	RootOf(id string) (string, bool)
}

// The outcomes of a permission request.
const (
	outcomeSelected  = "selected"
	outcomeCancelled = "cancelled"
)

// PermissionOutcome is the client's answer to session/request_permission.
type PermissionOutcome struct {
	Outcome  string `json:"outcome"`
	OptionID string `json:"optionId"`
}

// requestPermission asks the client and returns its outcome.
func (s *Server) requestPermission(ctx context.Context, params RequestPermissionRequest) (PermissionOutcome, error) {
	var res struct {
		Outcome PermissionOutcome `json:"outcome"`
	}
	err := s.call(ctx, MethodRequestPermission, params, &res)
	return res.Outcome, err
}

// call sends an agent→client request and decodes its result.
func (s *Server) call(ctx context.Context, method Method, params, result any) error {
	wait, err := s.send(ctx, method, params)
	if err != nil {
		return err
	}
	return wait(ctx, result)
}

// send writes an agent→client request now and returns the wait for its
// result (see conn.Send). A closed connection, met by either, marks the
// bridge disconnected.
func (s *Server) send(ctx context.Context, method Method, params any) (func(context.Context, any) error, error) {
	raw, err := marshal(params)
	if err != nil {
		return nil, err
	}
	select {
	case <-s.connReady:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	wait, err := s.conn.Send(ctx, string(method), raw)
	if err != nil {
		s.noteClosed(err)
		return nil, err
	}
	return func(ctx context.Context, result any) error {
		err := wait(ctx, result)
		s.noteClosed(err)
		return err
	}, nil
}

// noteClosed marks the bridge disconnected when err says the connection
// is closed.
func (s *Server) noteClosed(err error) {
	if errors.Is(err, ErrConnClosed) {
		s.disconnected()
	}
}
