package jsonl

import (
	"context"

	"github.com/dsh-acp/dsh-acp/session"
)

var _ session.Titler = (*Store)(nil)

// Title implements session.Titler: the title the list index keeps (the
// first line of the session's first user message with text), "" when
// there is none.
func (s *Store) Title(ctx context.Context, id string) (string, error) {
	sm, err := s.Lookup(ctx, id)
	if err != nil {
		return "", err
	}
	return sm.Title, nil
}
