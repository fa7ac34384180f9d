package jsonl

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
)

func TestTitle(t *testing.T) {
	st, err := Open(t.TempDir())
	require.NoError(t, err)
	h := session.Header{ID: "s1", CreatedAt: 1, Cwd: "/w"}
	log := session.NewLog(h, func() int64 { return 1 }, st)
	log.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	log.Append(session.TypeUserMessage, session.Message{Content: []session.Block{session.TextBlock("  Fix the flaky test in parser_test.go\nand explain why")}, Source: session.UserSource})
	log.Append(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}})
	require.NoError(t, log.Flush(context.Background()))
	title, err := st.Title(context.Background(), "s1")
	require.NoError(t, err)
	require.Equal(t, "Fix the flaky test in parser_test.go", title)
	_, err = st.Title(context.Background(), "missing")
	require.ErrorIs(t, err, session.ErrNotFound)
	require.Equal(t, 80, len([]rune(session.TitleOf(strings.Repeat("a", 200)))))
}
