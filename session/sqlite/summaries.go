package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/dsh-acp/dsh-acp/session"
)

// The summaries table keeps every session's last update and title current
// in the transaction that writes its events, so a page of the listing is
// one indexed range scan and a title one row (session.Indexer). It sits
// beside the contract's two tables, which it leaves as they are; a
// database an older build wrote gets it, filled from its events, when
// this build first opens it.
var summariesSchema = []string{
	`CREATE TABLE IF NOT EXISTS session_summaries(session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
       updated_at INTEGER NOT NULL, title TEXT NOT NULL) STRICT`,
	`CREATE INDEX IF NOT EXISTS session_summaries_order ON session_summaries(updated_at DESC, session_id)`,
}

var _ session.Indexer = (*Store)(nil)

// createSummaries creates the summaries table and fills it for the
// sessions it lacks (tx is the schema transaction).
func createSummaries(ctx context.Context, tx *sql.Tx) error {
	for _, stmt := range summariesSchema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("create session summaries: %w", err)
		}
	}
	rs, err := tx.QueryContext(ctx, `SELECT id FROM sessions WHERE id NOT IN (SELECT session_id FROM session_summaries)`)
	if err != nil {
		return fmt.Errorf("fill session summaries: %w", err)
	}
	var ids []string
	for rs.Next() {
		var id string
		if err := rs.Scan(&id); err != nil {
			_ = rs.Close()
			return fmt.Errorf("fill session summaries: %w", err)
		}
		ids = append(ids, id)
	}
	_ = rs.Close()
	for _, id := range ids {
		title, err := scanTitle(ctx, tx, id)
		if err != nil {
			return fmt.Errorf("fill session summaries: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO session_summaries(session_id, updated_at, title)
			SELECT id, COALESCE((SELECT time FROM events WHERE session_id = sessions.id ORDER BY seq DESC LIMIT 1), created_at), ?
			FROM sessions WHERE id = ?`, title, id); err != nil {
			return fmt.Errorf("fill session summaries: %w", err)
		}
	}
	return nil
}

// scanTitle reads a session's user messages up to its first titled one.
func scanTitle(ctx context.Context, tx *sql.Tx, id string) (string, error) {
	rs, err := tx.QueryContext(ctx, `SELECT seq, data FROM events WHERE session_id = ? AND type = ? ORDER BY seq`, id, session.TypeUserMessage)
	if err != nil {
		return "", err
	}
	defer rs.Close()
	for rs.Next() {
		ev := session.Event{Type: session.TypeUserMessage}
		var data string
		if err := rs.Scan(&ev.Seq, &data); err != nil {
			return "", err
		}
		ev.Data = []byte(data)
		if t := session.FirstTitle([]session.Event{ev}); t != "" {
			return t, nil
		}
	}
	return "", rs.Err()
}

// noteSummary brings the session's summary up to a write of events (tx
// is the write's transaction): the last event's time and, while it has
// none, the title of its first titled user message.
func noteSummary(ctx context.Context, tx *sql.Tx, id string, events []session.Event) error {
	if len(events) == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO session_summaries(session_id, updated_at, title) VALUES (?, ?, ?)
		ON CONFLICT(session_id) DO UPDATE SET updated_at = excluded.updated_at,
		title = CASE WHEN session_summaries.title = '' THEN excluded.title ELSE session_summaries.title END`,
		id, events[len(events)-1].Time, session.FirstTitle(events))
	return err
}

// resetUpdated recomputes a session's last update after its torn tail
// was dropped.
func resetUpdated(ctx context.Context, tx *sql.Tx, id string) error {
	_, err := tx.ExecContext(ctx, `UPDATE session_summaries SET updated_at =
		COALESCE((SELECT time FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1), (SELECT created_at FROM sessions WHERE id = ?))
		WHERE session_id = ?`, id, id, id)
	return err
}

const summaryColumns = `s.id, s.version, s.created_at, s.cwd, s.parent_session, s.seed_length, m.updated_at, m.title`

// scanSummary reads a row of summaryColumns.
func scanSummary(sc interface{ Scan(...any) error }) (session.Summary, error) {
	var sm session.Summary
	h, err := scanHeader(scanTail{sc, []any{&sm.UpdatedAt, &sm.Title}})
	sm.Header = h
	return sm, err
}

// scanTail scans a header row followed by extra columns.
type scanTail struct {
	sc    interface{ Scan(...any) error }
	extra []any
}

func (w scanTail) Scan(dest ...any) error { return w.sc.Scan(append(dest, w.extra...)...) }

// Page implements session.Indexer: one range scan of the summaries
// index from the cursor, stopping once the page is full.
func (s *Store) Page(ctx context.Context, q session.ListQuery) (session.Page, error) {
	if err := ctx.Err(); err != nil {
		return session.Page{}, err
	}
	after, ok, err := q.After()
	if err != nil {
		return session.Page{}, err
	}
	query := `SELECT ` + summaryColumns + ` FROM session_summaries m JOIN sessions s ON s.id = m.session_id`
	var args []any
	if ok {
		// A range on the index's first column, so the scan starts at
		// the cursor and needs no sort.
		query += ` WHERE m.updated_at <= ? AND NOT (m.updated_at = ? AND m.session_id <= ?)`
		args = append(args, after.UpdatedAt, after.UpdatedAt, after.Header.ID)
	}
	query += ` ORDER BY m.updated_at DESC, m.session_id`
	rs, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return session.Page{}, fmt.Errorf("list sessions: %w", err)
	}
	defer rs.Close()
	var scanErr error
	page := session.Collect(q, func(yield func(session.Summary) bool) {
		for rs.Next() {
			sm, err := scanSummary(rs)
			var ve *versionError
			if errors.As(err, &ve) {
				continue
			}
			if err != nil {
				scanErr = err
				return
			}
			if !yield(sm) {
				return
			}
		}
		scanErr = rs.Err()
	})
	if scanErr != nil {
		return session.Page{}, fmt.Errorf("list sessions: %w", scanErr)
	}
	return page, nil
}

// Lookup implements session.Indexer: one session's summary.
func (s *Store) Lookup(ctx context.Context, id string) (session.Summary, error) {
	if err := ctx.Err(); err != nil {
		return session.Summary{}, err
	}
	sm, err := scanSummary(s.db.QueryRowContext(ctx, `SELECT `+summaryColumns+`
		FROM session_summaries m JOIN sessions s ON s.id = m.session_id WHERE s.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return session.Summary{}, &NotFoundError{ID: id}
	}
	if err != nil {
		return session.Summary{}, fmt.Errorf("look up session %q: %w", id, err)
	}
	return sm, nil
}

var _ session.Titler = (*Store)(nil)

// Title implements session.Titler from the summaries table.
func (s *Store) Title(ctx context.Context, id string) (string, error) {
	sm, err := s.Lookup(ctx, id)
	return sm.Title, err
}

// Summaries implements session.Summarizer: every stored session's summary
// from the summaries table.
func (s *Store) Summaries(ctx context.Context) ([]session.Summary, error) {
	p, err := s.Page(ctx, session.ListQuery{Limit: math.MaxInt})
	return p.Sessions, err
}
