package sqlite

import (
	"context"
	"fmt"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/lock"
)

var (
	_ session.Summarizer = (*Store)(nil)
	_ session.Deleter    = (*Store)(nil)
)

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
