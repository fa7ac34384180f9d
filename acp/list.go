package acp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/session"
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
	// UpdatedAt is the time of the session's last event (ISO 8601, UTC).
	UpdatedAt string `json:"updatedAt,omitempty"`
}

// ListSessionsResponse is the result of session/list.
type ListSessionsResponse struct {
	Sessions   []SessionInfo `json:"sessions"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

// ListPageSize is how many sessions one session/list page holds.
const ListPageSize = 50

// listSessions handles session/list: the stored top-level sessions with an
// absolute cwd (optionally only those of one directory), most recently
// updated first, a page at a time (nextCursor continues).
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
	q := session.ListQuery{Limit: ListPageSize, Keep: func(sm session.Summary) bool {
		return sm.Header.ParentSession == "" && strings.HasPrefix(sm.Header.Cwd, "/")
	}}
	if req.Cwd != nil {
		q.Cwd = *req.Cwd
	}
	if req.Cursor != nil {
		q.Cursor = *req.Cursor
	}
	page, titled, err := s.sessionPage(ctx, q)
	if errors.Is(err, session.ErrBadCursor) {
		return nil, invalidParams("%v", err)
	}
	if err != nil {
		return nil, err
	}
	out := ListSessionsResponse{Sessions: []SessionInfo{}, NextCursor: page.Next}
	for _, sm := range page.Sessions {
		h := sm.Header
		title := sm.Title
		if !titled {
			title = s.agent.SessionTitle(ctx, h.ID)
		}
		out.Sessions = append(out.Sessions, SessionInfo{SessionID: h.ID, Cwd: h.Cwd, Title: title,
			UpdatedAt: time.UnixMilli(sm.UpdatedAt).UTC().Format("2006-01-02T15:04:05.000Z")})
	}
	return out, nil
}

// sessionPager is an Agent that pages its stored sessions itself, titles
// included.
type sessionPager interface {
	SessionPage(ctx context.Context, q session.ListQuery) (session.Page, error)
}

// sessionPage returns the page q selects and whether its summaries carry
// their titles.
func (s *Server) sessionPage(ctx context.Context, q session.ListQuery) (session.Page, bool, error) {
	if p, ok := s.agent.(sessionPager); ok {
		page, err := p.SessionPage(ctx, q)
		return page, true, err
	}
	var sums []session.Summary
	if sm, ok := s.agent.(sessionSummarizer); ok {
		var err error
		if sums, err = sm.SessionSummaries(ctx); err != nil {
			return session.Page{}, false, err
		}
	} else {
		hs, err := s.agent.ListSessions(ctx)
		if err != nil {
			return session.Page{}, false, err
		}
		for _, h := range hs {
			sums = append(sums, session.Summary{Header: h, UpdatedAt: h.CreatedAt})
		}
	}
	page, err := session.Paginate(sums, q)
	return page, false, err
}
