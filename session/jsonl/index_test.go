package jsonl_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
	"github.com/dsh-acp/dsh-acp/session/storetest"
)

// TestIndexBuiltForAnOlderRoot: a root whose logs an older build wrote
// (no sessions.index) is indexed from a scan at its first listing, with
// titles and last updates; a half-written last line of the index is left
// for the next look.
func TestIndexBuiltForAnOlderRoot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := jsonl.Open(dir)
	require.NoError(t, err)
	for i := range 3 {
		g := storetest.NewGen(0)
		g.TurnStart(1, fmt.Sprintf("job %d", i))
		g.TurnEnd(1)
		evs := g.Take()
		for j := range evs {
			evs[j].Time = int64(100*i + j)
		}
		require.NoError(t, st.Append(ctx, session.Header{ID: fmt.Sprintf("o%d", i), CreatedAt: int64(i), Cwd: "/w"}, evs))
	}
	require.NoError(t, st.Close())
	// What an older build leaves: the logs without the index.
	require.NoError(t, os.Remove(filepath.Join(dir, "sessions.index")))

	st, err = jsonl.Open(dir)
	require.NoError(t, err)
	defer st.Close()
	p, err := st.Page(ctx, session.ListQuery{Limit: 10})
	require.NoError(t, err)
	var got []string
	for _, s := range p.Sessions {
		got = append(got, fmt.Sprintf("%s %d %s", s.Header.ID, s.UpdatedAt, s.Title))
	}
	require.Equal(t, []string{"o2 202 job 2", "o1 102 job 1", "o0 2 job 0"}, got)

	f, err := os.OpenFile(filepath.Join(dir, "sessions.index"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"header":{"type":"session","version":0,"id":"o0","createdAt":0,"cwd":"/w"},"upd`)
	require.NoError(t, err)
	p, err = st.Page(ctx, session.ListQuery{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, "o2", p.Sessions[0].Header.ID)
	_, err = f.WriteString(`ated":999}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	p, err = st.Page(ctx, session.ListQuery{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, "o0", p.Sessions[0].Header.ID, "the completed line counts")
	require.Equal(t, "job 0", p.Sessions[0].Title, "a line without a title keeps it")
}
