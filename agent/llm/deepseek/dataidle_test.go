package deepseek

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
)

// keepAlives writes head, then a keep-alive comment every 10 ms until the
// client goes away (or tail after n comments, when n > 0).
func keepAlives(head string, n int, tail string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		_, _ = io.WriteString(w, head)
		f.Flush()
		for i := 0; n <= 0 || i < n; i++ {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			_, _ = io.WriteString(w, ": keep-alive\n\n")
			f.Flush()
		}
		_, _ = io.WriteString(w, tail)
	}
}

// A stream that sends one chunk and then only keep-alive comments ends
// with a readable TIMEOUT once the data-idle timeout passes (the byte idle
// timeout, which the comments keep resetting, would never fire), and is not
// sent again: its chunk already reached the caller. The loopback server
// sees the connection go away.
func TestKeepAlivesAfterTheFirstChunkDoNotHoldTheStreamOpen(t *testing.T) {
	var requests, gone atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		keepAlives(sseReasoning, 0, "")(w, r)
		gone.Add(1)
	}))
	defer srv.Close()
	p := New(Config{BaseURL: srv.URL, IdleTimeout: 5 * time.Second, DataIdleTimeout: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lines, err := collect(t, p.Stream(ctx, simpleRequest()))
	require.NoError(t, ctx.Err(), "the stream ended by itself, not at the test's deadline")
	le, ok := err.(*llm.Error)
	require.True(t, ok, "%v", err)
	require.Equal(t, CodeTimeout, le.Code)
	require.Contains(t, le.Message, "keep-alive comments for 300ms")
	require.Equal(t, okChunks[:2], lines[:2], "the first chunk reached the caller")
	require.Len(t, lines, 3)
	require.Equal(t, int32(1), requests.Load(), "not retried after chunks were delivered")
	require.Eventually(t, func() bool { return gone.Load() == 1 }, 5*time.Second, 5*time.Millisecond, "the connection was closed")
}

// Before the first data event, keep-alives are a queued request's: they
// may go on longer than the data-idle timeout.
func TestKeepAlivesBeforeTheFirstChunkAreWaitedFor(t *testing.T) {
	srv := httptest.NewServer(keepAlives("", 30, sseOK)) // ≥ 300 ms of comments
	defer srv.Close()
	p := New(Config{BaseURL: srv.URL, IdleTimeout: 5 * time.Second, DataIdleTimeout: 100 * time.Millisecond, MaxRetries: -1})
	lines, err := collect(t, p.Stream(context.Background(), simpleRequest()))
	require.NoError(t, err)
	require.Equal(t, okChunks, lines)
}

// The data-idle timeout times the server, not the caller: a consumer that
// holds a chunk longer than it still gets the rest.
func TestDataIdleTimeoutIgnoresASlowConsumer(t *testing.T) {
	srv := httptest.NewServer(keepAlives(sseReasoning, 2, sseText+sseDone))
	defer srv.Close()
	p := New(Config{BaseURL: srv.URL, DataIdleTimeout: 100 * time.Millisecond, MaxRetries: -1})
	var lines []string
	for c, err := range p.Stream(context.Background(), simpleRequest()) {
		require.NoError(t, err)
		b, _ := c.MarshalJSON()
		lines = append(lines, string(b))
		if len(lines) == 2 {
			time.Sleep(400 * time.Millisecond) // four data-idle timeouts, busy
		}
	}
	require.Equal(t, okChunks, lines)
}
