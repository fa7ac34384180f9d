package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A model endpoint that streams one chunk and then only keep-alive
// comments does not hold the turn open: over the wire, the prompt ends
// with a readable TIMEOUT once network.dataIdleTimeoutSec passes, the
// chunk already shown stays shown, and the loopback server sees its
// connection closed. (Before this bound existed the comments reset the
// byte idle timeout forever and session/prompt never answered.)
func TestKeepAliveOnlyStreamEndsTheTurn(t *testing.T) {
	var closed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/chat/completions" {
			_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}`+"\n\n")
		f.Flush()
		for {
			select {
			case <-r.Context().Done():
				closed.Store(true)
				return
			case <-time.After(20 * time.Millisecond):
			}
			_, _ = io.WriteString(w, ": keep-alive\n\n")
			f.Flush()
		}
	}))
	defer srv.Close()
	home, cwd := t.TempDir(), t.TempDir()
	cfg := filepath.Join(home, "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"network":{"dataIdleTimeoutSec":0.5,"idleTimeoutSec":30}}`), 0o600))
	s := start(t, []string{"--sessions-root", t.TempDir(), "--config", cfg}, map[string]string{
		"HOME": home, "DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": srv.URL,
	})
	_, sid := s.open(cwd)
	lines := s.prompt(sid, "hi")
	all := strings.Join(lines, "\n")
	require.Contains(t, all, `"text":"Hel"`, "the chunk reached the editor")
	last := lines[len(lines)-1]
	require.Contains(t, last, `"error"`)
	require.Contains(t, last, "keep-alive comments for 500ms")
	require.Contains(t, last, `"code":"TIMEOUT"`)
	require.Eventually(t, closed.Load, 5*time.Second, 5*time.Millisecond, "the stream's connection was closed")
}
