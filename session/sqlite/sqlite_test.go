package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/storetest"
)

func openTest(t *testing.T, path string, opts ...Option) *Store {
	t.Helper()
	st, err := Open(path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func pragma(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var v string
	require.NoError(t, db.QueryRow("PRAGMA "+name).Scan(&v))
	return v
}

func TestPragmasAndSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	st := openTest(t, path)
	require.Equal(t, "wal", pragma(t, st.db, "journal_mode"))
	require.Equal(t, "1", pragma(t, st.db, "foreign_keys"))
	require.Equal(t, "5000", pragma(t, st.db, "busy_timeout"))
	require.Equal(t, "4", pragma(t, st.db, "user_version"))

	type col struct {
		name, typ      string
		notNull, pkPos int
	}
	cols := func(table string) []col {
		rs, err := st.db.Query("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)", table)
		require.NoError(t, err)
		defer rs.Close()
		var out []col
		for rs.Next() {
			var c col
			require.NoError(t, rs.Scan(&c.name, &c.typ, &c.notNull, &c.pkPos))
			out = append(out, c)
		}
		require.NoError(t, rs.Err())
		return out
	}
	// STRICT makes the primary key column id NOT NULL.
	require.Equal(t, []col{
		{"id", "TEXT", 1, 1}, {"version", "INTEGER", 1, 0}, {"created_at", "INTEGER", 1, 0},
		{"cwd", "TEXT", 0, 0}, {"parent_session", "TEXT", 0, 0}, {"seed_length", "INTEGER", 0, 0},
	}, cols("sessions"))
	require.Equal(t, []col{
		{"session_id", "TEXT", 1, 1}, {"seq", "INTEGER", 1, 2}, {"type", "TEXT", 1, 0}, {"time", "INTEGER", 1, 0},
		{"data", "TEXT", 1, 0}, {"source_event_seqs", "TEXT", 0, 0}, {"surface_op", "TEXT", 0, 0},
	}, cols("events"))
	for _, table := range []string{"sessions", "events"} {
		var strict int
		require.NoError(t, st.db.QueryRow("SELECT strict FROM pragma_table_list WHERE name = ?", table).Scan(&strict))
		require.Equal(t, 1, strict, table)
	}

	// foreign_keys = ON: deleting a session cascades to its events.
	ctx := context.Background()
	g := storetest.NewGen(0)
	g.Turn(1, 1)
	require.NoError(t, st.Append(ctx, session.Header{ID: "fk", CreatedAt: 1}, g.Events))
	_, err := st.db.Exec("DELETE FROM sessions WHERE id = 'fk'")
	require.NoError(t, err)
	var n int
	require.NoError(t, st.db.QueryRow("SELECT count(*) FROM events").Scan(&n))
	require.Zero(t, n)
}

func TestJournalModes(t *testing.T) {
	for _, mode := range []string{"delete", "TRUNCATE", "Persist", "WAL"} {
		st := openTest(t, filepath.Join(t.TempDir(), "s.db"), WithJournalMode(mode))
		require.Equal(t, strings.ToLower(mode), pragma(t, st.db, "journal_mode"))
	}
	_, err := Open(filepath.Join(t.TempDir(), "s.db"), WithJournalMode("memory"))
	require.EqualError(t, err, `open session database: unsupported journal mode "MEMORY"`)
}

func TestBusyTimeoutOption(t *testing.T) {
	st := openTest(t, filepath.Join(t.TempDir(), "s.db"), WithBusyTimeout(1234e6))
	require.Equal(t, "1234", pragma(t, st.db, "busy_timeout"))
}

func TestSchemaVersionRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old?#%.db")
	db, err := sql.Open("sqlite", "file:"+escapePath(path))
	require.NoError(t, err)
	_, err = db.Exec("PRAGMA user_version = 3")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = Open(path)
	require.EqualError(t, err, `session database at "`+path+`" has schema version 3, incompatible with this build (4)`)
}

func TestReopenPersists(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	h := session.Header{ID: "persist", CreatedAt: 9, Cwd: "/w", ParentSession: "p", SeedLength: 2}
	g := storetest.NewGen(0)
	g.Turn(1, 2)
	st, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, st.Append(ctx, h, g.Take()))
	require.NoError(t, st.Close())

	st = openTest(t, path)
	gotH, got, err := st.Load(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, h, gotH)
	require.Equal(t, storetest.Lines(t, g.Events), storetest.Lines(t, got))
	g.Turn(2, 0)
	require.NoError(t, st.Append(ctx, h, g.Take()))
	hs, err := st.List(ctx)
	require.NoError(t, err)
	require.Equal(t, []session.Header{h}, hs)
}

func TestKeyOrderMarker(t *testing.T) {
	ctx := context.Background()
	st := openTest(t, filepath.Join(t.TempDir(), "s.db"))
	g := storetest.NewGen(0)
	g.TurnStart(1, "x")
	g.StepWithTool(1, 1, 0, []string{"c1"}, 1, 0, false)
	require.NoError(t, st.Append(ctx, session.Header{ID: "k", CreatedAt: 1}, g.Events))
	_, got, err := st.Load(ctx, "k")
	require.NoError(t, err)
	closer := got[len(g.Events)]
	require.True(t, closer.SurfaceOpFirst)

	texts := map[string]string{}
	rs, err := st.db.Query("SELECT type, source_event_seqs, surface_op FROM events WHERE source_event_seqs IS NOT NULL")
	require.NoError(t, err)
	defer rs.Close()
	for rs.Next() {
		var typ, seqs, op string
		require.NoError(t, rs.Scan(&typ, &seqs, &op))
		require.Equal(t, `"append"`, op)
		texts[typ] = seqs
	}
	require.NoError(t, rs.Err())
	require.Equal(t, map[string]string{
		session.TypeToolResult: " [" + strconv.Itoa(closer.SourceEventSeqs[0]) + "]",
	}, texts, "only the surfaceOp-first closer carries the marker; the assistant message streamed no chunks")
}

func TestTornAndCorruptRows(t *testing.T) {
	ctx := context.Background()
	st := openTest(t, filepath.Join(t.TempDir(), "s.db"))
	g := storetest.NewGen(0)
	g.Turn(1, 1)
	g.TurnStart(2, "more")
	n := len(g.Events)
	require.NoError(t, st.Append(ctx, session.Header{ID: "t", CreatedAt: 1}, g.Events))
	// After the last turn/end: an unparsable row and a row beyond a gap.
	_, err := st.db.Exec(`INSERT INTO events VALUES ('t', ?, 'step/start', 1, '{"turn":2', NULL, NULL), ('t', ?, 'step/end', 1, '{}', NULL, NULL)`, n, n+2)
	require.NoError(t, err)
	_, got, err := st.Load(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, n+1, len(got)) // prefix + turn/end interrupted
	require.Equal(t, storetest.Lines(t, g.Events), storetest.Lines(t, got[:n]))
	var rows int
	require.NoError(t, st.db.QueryRow("SELECT count(*) FROM events WHERE session_id = 't'").Scan(&rows))
	require.Equal(t, n+1, rows, "torn rows deleted, closer inserted")

	// Corruption at or before the last turn/end is fatal and changes nothing.
	_, err = st.db.Exec(`UPDATE events SET data = 'nope' WHERE session_id = 't' AND seq = 2`)
	require.NoError(t, err)
	_, _, err = st.Load(ctx, "t")
	require.EqualError(t, err, "corrupt session log: unparsable committed event at line 3")
	_, err = st.db.Exec(`UPDATE events SET data = '{}', source_event_seqs = '[1,' WHERE session_id = 't' AND seq = 2`)
	require.NoError(t, err)
	_, _, err = st.Load(ctx, "t")
	require.EqualError(t, err, "corrupt session log: unparsable committed event at line 3")
	_, err = st.db.Exec(`DELETE FROM events WHERE session_id = 't' AND seq = 2`)
	require.NoError(t, err)
	_, _, err = st.Load(ctx, "t")
	require.EqualError(t, err, "corrupt session log: seq gap in committed region at line 3 (expected 2, got 3)")
	require.NoError(t, st.db.QueryRow("SELECT count(*) FROM events WHERE session_id = 't'").Scan(&rows))
	require.Equal(t, n, rows)
}

func TestUnsupportedHeaderVersion(t *testing.T) {
	ctx := context.Background()
	st := openTest(t, filepath.Join(t.TempDir(), "s.db"))
	_, err := st.db.Exec(`INSERT INTO sessions(id, version, created_at) VALUES ('v', 2, 1)`)
	require.NoError(t, err)
	_, _, err = st.Load(ctx, "v")
	require.EqualError(t, err, `unsupported session format version 2 for "v" (only v0 is supported)`)
	hs, err := st.List(ctx)
	require.NoError(t, err)
	require.Empty(t, hs)
}
