package llm

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNoticeReachesTheNoticerOfTheContext(t *testing.T) {
	Notice(context.Background(), "nobody listens") // no noticer: nothing happens
	var got []string
	ctx := WithNoticer(context.Background(), func(s string) { got = append(got, s) })
	Notice(ctx, "rate limited, retrying in 4s")
	require.Equal(t, []string{"rate limited, retrying in 4s"}, got)
}
