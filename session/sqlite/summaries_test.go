package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/storetest"
)

// TestSummariesFilledForAnOlderDatabase: a database an older build wrote
// (the contract's two tables, no summaries) gets its summaries, titles
// and last updates from its events when this build opens it; the
// contract's tables are left as they were.
func TestSummariesFilledForAnOlderDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st := openTest(t, path)
	g := storetest.NewGen(0)
	g.Turn(1, 2)
	evs := g.Take()
	for i := range evs {
		evs[i].Time = int64(10 + i)
	}
	require.NoError(t, st.Append(ctx, session.Header{ID: "old", CreatedAt: 1, Cwd: "/w"}, evs))
	require.NoError(t, st.Append(ctx, session.Header{ID: "empty", CreatedAt: 5, Cwd: "/w"}, []session.Event{{Type: session.TypeTurnStart, Seq: 0, Time: 7, Data: []byte(`{"turn":1}`)}}))
	_, err := st.db.Exec(`DROP TABLE session_summaries`)
	require.NoError(t, err)
	require.NoError(t, st.Close())

	st = openTest(t, path)
	p, err := st.Page(ctx, session.ListQuery{Limit: 5})
	require.NoError(t, err)
	require.Len(t, p.Sessions, 2)
	require.Equal(t, "old", p.Sessions[0].Header.ID)
	require.Equal(t, int64(10+len(evs)-1), p.Sessions[0].UpdatedAt)
	require.Equal(t, `prompt 1: list <files> & say "hi"`, p.Sessions[0].Title)
	require.Equal(t, session.Summary{Header: session.Header{ID: "empty", CreatedAt: 5, Cwd: "/w"}, UpdatedAt: 7}, p.Sessions[1])
	require.Equal(t, "4", pragma(t, st.db, "user_version"))
}
