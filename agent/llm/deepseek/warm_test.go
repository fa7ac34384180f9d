package deepseek

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
)

// TestWarmReusesTheConnection checks that the first model call after Warm
// rides the connection Warm opened.
func TestWarmReusesTheConnection(t *testing.T) {
	var conns, idle atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			require.Equal(t, "/models", r.URL.Path)
			require.Equal(t, "Bearer k", r.Header.Get("Authorization"))
			_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateIdle:
			idle.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	p := New(Config{BaseURL: srv.URL, APIKey: "k"})
	p.Warm(context.Background())
	require.Equal(t, int32(1), conns.Load())
	var got []llm.ChunkType
	for c, err := range p.Stream(context.Background(), &llm.Request{Config: llm.Config{Model: "m"},
		Messages: []llm.Message{{Role: "user", Content: []session.Block{session.TextBlock("x")}}}}) {
		require.NoError(t, err)
		got = append(got, c.Type)
	}
	require.Contains(t, got, llm.ChunkTextDelta)
	require.Equal(t, int32(1), conns.Load(), "the model call reused the warmed connection")
	// A second call (the next step) reuses it too once the first is drained.
	require.Eventually(t, func() bool { return idle.Load() >= 2 }, 5*time.Second, time.Millisecond, "the drained connection went idle")
	for _, err := range p.Stream(context.Background(), &llm.Request{Config: llm.Config{Model: "m"},
		Messages: []llm.Message{{Role: "user", Content: []session.Block{session.TextBlock("y")}}}}) {
		require.NoError(t, err)
	}
	require.Equal(t, int32(1), conns.Load(), "the next step reused the connection")
}
