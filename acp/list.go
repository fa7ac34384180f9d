package acp

import (
	"context"
	"encoding/json"
	"path"
	"sort"
	"strings"
)

// ListSessionsRequest is the params of session/list.
type ListSessionsRequest struct {
	Cwd    *string `json:"cwd,omitempty"`
	Cursor *string `json:"cursor,omitempty"`
}

// SessionInfo is one stored session in session/list.
type SessionInfo struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title,omitempty"`
}

// ListSessionsResponse is the result of session/list.
type ListSessionsResponse struct {
	Sessions []SessionInfo `json:"sessions"`
}

// listSessions handles session/list: the stored top-level sessions with an
// absolute cwd (optionally only those of one directory), newest first. No
// timestamp of last activity is given: the store keeps only creation times.
func (s *Server) listSessions(ctx context.Context, params json.RawMessage) (any, error) {
	var req ListSessionsRequest
	if len(params) > 0 && string(params) != "null" {
		if err := decode(params, &req); err != nil {
			return nil, err
		}
	}
	if req.Cwd != nil && !strings.HasPrefix(*req.Cwd, "/") {
		return nil, invalidParams("cwd must be an absolute path: %s", *req.Cwd)
	}
	hs, err := s.agent.ListSessions(ctx)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].CreatedAt > hs[j].CreatedAt })
	out := ListSessionsResponse{Sessions: []SessionInfo{}}
	for _, h := range hs {
		if h.ParentSession != "" || !strings.HasPrefix(h.Cwd, "/") {
			continue
		}
		if req.Cwd != nil && path.Clean(*req.Cwd) != path.Clean(h.Cwd) {
			continue
		}
		out.Sessions = append(out.Sessions, SessionInfo{SessionID: h.ID, Cwd: h.Cwd, Title: s.agent.SessionTitle(ctx, h.ID)})
	}
	return out, nil
}
