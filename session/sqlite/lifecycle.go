package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/lock"
)

var (
	_ session.Summarizer = (*Store)(nil)
	_ session.Deleter    = (*Store)(nil)
)

// Summaries implements session.Summarizer: every stored session's header
// and the time of its last event (its creation time while it has none).
func (s *Store) Summaries(ctx context.Context) ([]session.Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rs, err := s.db.QueryContext(ctx, `SELECT `+headerColumns+`,
		COALESCE((SELECT time FROM events WHERE session_id = sessions.id ORDER BY seq DESC LIMIT 1), created_at)
		FROM sessions`)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rs.Close()
	var out []session.Summary
	for rs.Next() {
		var updated int64
		h, err := scanHeader(scanWith{rs, &updated})
		var ve *versionError
		if errors.As(err, &ve) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, session.Summary{Header: h, UpdatedAt: updated})
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// scanWith scans a header row followed by extra columns.
type scanWith struct {
	sc    interface{ Scan(...any) error }
	extra *int64
}

func (w scanWith) Scan(dest ...any) error { return w.sc.Scan(append(dest, w.extra)...) }

// Delete implements session.Deleter: under the session's lock it removes
// the session row and (by cascade) its events, then gives the lock up. A
// session this store or another process holds is refused.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	held := s.held[id]
	s.mu.Unlock()
	if held != nil {
		return &session.HeldError{ID: id, Holder: lock.ReadHolder(held.Path())}
	}
	var exists bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM sessions WHERE id = ?)`, id).Scan(&exists); err != nil {
		return fmt.Errorf("delete session %q: %w", id, err)
	}
	if !exists {
		return &NotFoundError{ID: id}
	}
	if err := s.own(id); err != nil {
		return err
	}
	defer func() { _ = s.Release(id) }()
	res, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("delete session %q: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return &NotFoundError{ID: id}
	}
	return nil
}
