package approval

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
)

type fixed struct {
	out  Outcome
	ok   bool
	err  error
	wait chan struct{}
}

func (f fixed) Answer(ctx context.Context, _ string, _ Request) (Outcome, bool, error) {
	if f.wait != nil {
		select {
		case <-f.wait:
		case <-ctx.Done():
			return "", false, ctx.Err()
		}
	}
	return f.out, f.ok, f.err
}

func openLog(t *testing.T) *session.Log {
	l := session.NewLog(session.Header{ID: "s"}, func() int64 { return 0 }, nil)
	l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	return l
}

func ids() func() string { return func() string { return "id-1" } }

func TestOutcomes(t *testing.T) {
	cases := []struct {
		name string
		a    []Answerer
		want Outcome
	}{
		{"allowed", []Answerer{fixed{out: AllowedOnce, ok: true}}, AllowedOnce},
		{"rejected", []Answerer{fixed{out: Rejected, ok: true}}, Rejected},
		{"allowed always", []Answerer{fixed{out: AllowedAlways, ok: true}}, AllowedAlways},
		{"no answerer", nil, Unavailable},
		{"falls through", []Answerer{fixed{ok: false}, fixed{out: AllowedOnce, ok: true}}, AllowedOnce},
		{"answerer error", []Answerer{fixed{err: errors.New("gone"), ok: true}}, Unavailable},
		{"unknown answer", []Answerer{fixed{out: "allow-always", ok: true}}, Unavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := openLog(t)
			out, err := NewService(PolicyAsk, ids(), c.a...).Request(context.Background(), l, Request{ToolName: "bash", CallID: "c1", Reason: "why"})
			require.NoError(t, err)
			require.Equal(t, c.want, out)
			ev := l.Events()
			require.Equal(t, `{"id":"id-1","toolName":"bash","callId":"c1","reason":"why"}`, string(ev[1].Data))
			require.Equal(t, `{"id":"id-1","outcome":"`+string(c.want)+`"}`, string(ev[2].Data))
		})
	}
}

func TestNeverRejectsWithoutAsking(t *testing.T) {
	l := openLog(t)
	l.Append(session.TypeApprovalPolicy, map[string]string{"policy": "never"})
	asked := false
	s := NewService(PolicyAsk, ids(), answererFunc(func() { asked = true }))
	out, err := s.Request(context.Background(), l, Request{ToolName: "bash"})
	require.NoError(t, err)
	require.Equal(t, Rejected, out)
	require.False(t, asked)
}

type answererFunc func()

func (f answererFunc) Answer(context.Context, string, Request) (Outcome, bool, error) {
	f()
	return AllowedOnce, true, nil
}

func TestAbortWhileWaitingIsCancelled(t *testing.T) {
	l := openLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	out, err := NewService(PolicyAsk, ids(), fixed{wait: make(chan struct{}), ok: true, out: AllowedOnce}).Request(ctx, l, Request{ToolName: "bash"})
	require.NoError(t, err)
	require.Equal(t, Cancelled, out)
}

func TestRequestOutsideTurnIsAnError(t *testing.T) {
	l := session.NewLog(session.Header{ID: "s"}, func() int64 { return 0 }, nil)
	_, err := NewService(PolicyAsk, ids()).Request(context.Background(), l, Request{ToolName: "bash"})
	require.ErrorIs(t, err, ErrNoOpenTurn)
}

func TestNarration(t *testing.T) {
	require.Equal(t, `The approval policy changed from "ask" to "never" (changed by the user).`, Narration("ask", "never", true))
}
