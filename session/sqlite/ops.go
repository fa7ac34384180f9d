package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// row is one events row as stored.
type row struct {
	seq  int
	typ  string
	time int64
	data string
	seqs sql.NullString
	op   sql.NullString
}

// toRow renders an event for storage. Data and SurfaceOp are compacted (HTML
// escapes undone) like the JSONL store does.
func toRow(ev session.Event) (row, error) {
	r := row{seq: ev.Seq, typ: ev.Type, time: ev.Time, data: "{}"}
	if len(ev.Data) > 0 {
		d, err := jsonx.Compact(ev.Data)
		if err != nil {
			return row{}, fmt.Errorf("event %d (%s): data: %w", ev.Seq, ev.Type, err)
		}
		r.data = string(d)
	}
	if ev.SurfaceOp != nil {
		op, err := jsonx.Compact(ev.SurfaceOp)
		if err != nil {
			return row{}, fmt.Errorf("event %d (%s): surfaceOp: %w", ev.Seq, ev.Type, err)
		}
		r.op = sql.NullString{String: string(op), Valid: true}
	}
	if seqs := ev.Sources(); seqs != nil {
		var b strings.Builder
		if ev.SurfaceOpFirst && ev.SurfaceOp != nil {
			b.WriteByte(' ') // key-order marker, see the package doc
		}
		b.WriteByte('[')
		for i, s := range seqs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(s))
		}
		b.WriteByte(']')
		r.seqs = sql.NullString{String: b.String(), Valid: true}
	}
	return r, nil
}

// event maps a row back to its Event; ok is false for a row whose JSON
// columns do not parse.
func (r row) event() (session.Event, bool) {
	ev := session.Event{Type: r.typ, Seq: r.seq, Time: r.time, Data: json.RawMessage(r.data)}
	if !json.Valid(ev.Data) {
		return ev, false
	}
	if r.op.Valid {
		if !json.Valid([]byte(r.op.String)) {
			return ev, false
		}
		ev.SurfaceOp = json.RawMessage(r.op.String)
	}
	if r.seqs.Valid {
		seqs := []int{}
		if err := json.Unmarshal([]byte(r.seqs.String), &seqs); err != nil {
			return ev, false
		}
		ev.SourceEventSeqs = seqs
		ev.SurfaceOpFirst = ev.SurfaceOp != nil && strings.HasPrefix(r.seqs.String, " ")
	}
	return ev, true
}

// Append persists events in one BEGIN IMMEDIATE transaction; they must
// continue the stored seq exactly. The first batch of a session inserts its
// sessions row from h.
func (s *Store) Append(ctx context.Context, h session.Header, events []session.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if h.ID == "" {
		return errors.New("append to session: empty session id")
	}
	if len(events) == 0 {
		return nil
	}
	rows := make([]row, len(events))
	for i, ev := range events {
		r, err := toRow(ev)
		if err != nil {
			return fmt.Errorf("append to session %q: %w", h.ID, err)
		}
		rows[i] = r
	}
	if err := s.own(h.ID); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", h.ID, err)
	}
	defer func() { _ = tx.Rollback() }()
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM sessions WHERE id = ?)`, h.ID).Scan(&exists); err != nil {
		return fmt.Errorf("append to session %q: %w", h.ID, err)
	}
	next := 0
	if exists {
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE session_id = ?`, h.ID).Scan(&next); err != nil {
			return fmt.Errorf("append to session %q: %w", h.ID, err)
		}
	}
	for i, ev := range events {
		if ev.Seq != next+i {
			return fmt.Errorf("append seq mismatch for %q: expected %d at index %d, got %d", h.ID, next+i, i, ev.Seq)
		}
	}
	if !exists {
		if h.Version != session.FormatVersion {
			return fmt.Errorf("append to session %q: header version %d, want %d", h.ID, h.Version, session.FormatVersion)
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO sessions(id, version, created_at, cwd, parent_session, seed_length) VALUES (?, ?, ?, ?, ?, ?)`,
			h.ID, h.Version, h.CreatedAt, nullString(h.Cwd), nullString(h.ParentSession), nullInt(h.SeedLength)); err != nil {
			return fmt.Errorf("append to session %q: %w", h.ID, err)
		}
	}
	if err := insertRows(ctx, tx, h.ID, rows); err != nil {
		return fmt.Errorf("append to session %q: %w", h.ID, err)
	}
	if err := noteSummary(ctx, tx, h.ID, events); err != nil {
		return fmt.Errorf("append to session %q: %w", h.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("append to session %q: %w", h.ID, err)
	}
	return nil
}

func insertRows(ctx context.Context, tx *sql.Tx, id string, rows []row) error {
	stmt, err := tx.PrepareContext(ctx,
		`INSERT INTO events(session_id, seq, type, time, data, source_event_seqs, surface_op) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, id, r.seq, r.typ, r.time, r.data, r.seqs, r.op); err != nil {
			return fmt.Errorf("insert event %d: %w", r.seq, err)
		}
	}
	return nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func nullInt(n int) sql.NullInt64 { return sql.NullInt64{Int64: int64(n), Valid: n != 0} }

// scanHeader reads a sessions row; version errors use the text of
// session.Header.UnmarshalJSON.
func scanHeader(sc interface{ Scan(...any) error }) (session.Header, error) {
	var (
		h           session.Header
		cwd, parent sql.NullString
		seed        sql.NullInt64
	)
	if err := sc.Scan(&h.ID, &h.Version, &h.CreatedAt, &cwd, &parent, &seed); err != nil {
		return session.Header{}, err
	}
	h.Cwd, h.ParentSession, h.SeedLength = cwd.String, parent.String, int(seed.Int64)
	if h.Version != session.FormatVersion {
		line, err := h.MarshalJSON()
		if err == nil {
			err = new(session.Header).UnmarshalJSON(line)
		}
		return session.Header{}, &versionError{err}
	}
	return h, nil
}

// versionError carries the header version error text unchanged.
type versionError struct{ err error }

func (e *versionError) Error() string { return e.err.Error() }
func (e *versionError) Unwrap() error { return e.err }

const headerColumns = `id, version, created_at, cwd, parent_session, seed_length`

// Load returns the stored session id, repaired like the JSONL store
// (contract §§ 6–7) inside one BEGIN IMMEDIATE transaction: rows after the
// last turn/end that do not parse or break seq contiguity are deleted, and
// the crash-repair closers of an open turn are inserted.
func (s *Store) Load(ctx context.Context, id string) (session.Header, []session.Event, error) {
	if err := ctx.Err(); err != nil {
		return session.Header{}, nil, err
	}
	// Own the session before reading it (a session another process holds
	// is neither read nor repaired here); an unknown id takes no lock.
	var exists bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM sessions WHERE id = ?)`, id).Scan(&exists); err != nil {
		return session.Header{}, nil, fmt.Errorf("load session %q: %w", id, err)
	}
	if !exists {
		return session.Header{}, nil, &NotFoundError{ID: id}
	}
	if err := s.own(id); err != nil {
		return session.Header{}, nil, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return session.Header{}, nil, fmt.Errorf("load session %q: %w", id, err)
	}
	defer func() { _ = tx.Rollback() }()
	h, err := scanHeader(tx.QueryRowContext(ctx, `SELECT `+headerColumns+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return session.Header{}, nil, &NotFoundError{ID: id}
	}
	var ve *versionError
	if errors.As(err, &ve) {
		return session.Header{}, nil, err
	}
	if err != nil {
		return session.Header{}, nil, fmt.Errorf("load session %q: %w", id, err)
	}
	cands, err := readRows(ctx, tx, id)
	if err != nil {
		return session.Header{}, nil, fmt.Errorf("load session %q: %w", id, err)
	}
	n, err := session.CommittedPrefix(cands)
	if err != nil {
		return session.Header{}, nil, err // contract text, unprefixed
	}
	events := make([]session.Event, n)
	for i := range events {
		events[i] = cands[i].Event
	}
	dirty := false
	if n < len(cands) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE session_id = ? AND seq >= ?`, id, n); err != nil {
			return session.Header{}, nil, fmt.Errorf("load session %q: drop torn tail: %w", id, err)
		}
		if err := resetUpdated(ctx, tx, id); err != nil {
			return session.Header{}, nil, fmt.Errorf("load session %q: drop torn tail: %w", id, err)
		}
		dirty = true
	}
	if closers := session.RepairClosers(events); len(closers) > 0 {
		rows := make([]row, len(closers))
		for i, ev := range closers {
			if rows[i], err = toRow(ev); err != nil {
				return session.Header{}, nil, fmt.Errorf("load session %q: repair: %w", id, err)
			}
		}
		if err := insertRows(ctx, tx, id, rows); err != nil {
			return session.Header{}, nil, fmt.Errorf("load session %q: repair: %w", id, err)
		}
		if err := noteSummary(ctx, tx, id, closers); err != nil {
			return session.Header{}, nil, fmt.Errorf("load session %q: repair: %w", id, err)
		}
		events = append(events, closers...)
		dirty = true
	}
	if dirty {
		if err := tx.Commit(); err != nil {
			return session.Header{}, nil, fmt.Errorf("load session %q: %w", id, err)
		}
	}
	return h, events, nil
}

func readRows(ctx context.Context, tx *sql.Tx, id string) ([]session.Candidate, error) {
	rs, err := tx.QueryContext(ctx,
		`SELECT seq, type, time, data, source_event_seqs, surface_op FROM events WHERE session_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []session.Candidate
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.seq, &r.typ, &r.time, &r.data, &r.seqs, &r.op); err != nil {
			return nil, err
		}
		ev, ok := r.event()
		out = append(out, session.Candidate{Event: ev, OK: ok})
	}
	return out, rs.Err()
}

// List returns the headers of all stored sessions from the sessions table,
// ordered by creation time then id. Rows of an unsupported version are
// skipped.
func (s *Store) List(ctx context.Context) ([]session.Header, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rs, err := s.db.QueryContext(ctx, `SELECT `+headerColumns+` FROM sessions ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rs.Close()
	var out []session.Header
	for rs.Next() {
		h, err := scanHeader(rs)
		var ve *versionError
		if errors.As(err, &ve) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, h)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

var _ session.Reader = (*Store)(nil)

// ReadBack implements session.Reader: the first n events of the stored
// session id, read in one query without repairing anything.
func (s *Store) ReadBack(ctx context.Context, id string, n int) ([]session.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rs, err := s.db.QueryContext(ctx,
		`SELECT seq, type, time, data, source_event_seqs, surface_op FROM events WHERE session_id = ? AND seq < ? ORDER BY seq`, id, n)
	if err != nil {
		return nil, fmt.Errorf("read back session %q: %w", id, err)
	}
	defer rs.Close()
	events := make([]session.Event, 0, n)
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.seq, &r.typ, &r.time, &r.data, &r.seqs, &r.op); err != nil {
			return nil, fmt.Errorf("read back session %q: %w", id, err)
		}
		ev, ok := r.event()
		if !ok || ev.Seq != len(events) {
			return nil, fmt.Errorf("read back session %q: event %d does not read back", id, r.seq)
		}
		events = append(events, ev)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("read back session %q: %w", id, err)
	}
	if len(events) < n {
		return nil, fmt.Errorf("read back session %q: %d events stored, %d asked for", id, len(events), n)
	}
	return events, nil
}
