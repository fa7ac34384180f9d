package composition_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Through the wire: web_fetch of a loopback URL asks, saying it is on the
// user's machine; refused, it opens no connection; a redirect from an
// approved origin to another port asks again.
func TestWebFetchPrivateDestinationAsks(t *testing.T) {
	var conns atomic.Int32
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("other")) }))
	other.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	other.Start()
	defer other.Close()
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/", http.StatusFound)
	}))
	defer first.Close()

	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	var asked []permissionCall
	answer := func(method string, params json.RawMessage) any {
		if method != "session/request_permission" {
			return nil
		}
		var pc permissionCall
		require.NoError(t, json.Unmarshal(params, &pc))
		asked = append(asked, pc)
		id := "reject-once"
		if strings.Contains(pc.texts(), "the first request to "+first.URL+" ") {
			id = "allow-always"
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": id}}
	}
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, answer)
	sid := srv.newSession(t, ws).SessionID
	args, _ := json.Marshal(map[string]any{"url": other.URL + "/"})
	p.script("fetch", toolCall{Name: "web_fetch", Args: string(args)})
	srv.prompt(t, sid, "fetch")
	require.Len(t, asked, 1)
	assert.Contains(t, asked[0].texts(), "loopback")
	assert.Zero(t, conns.Load(), "a refused private destination was connected to")

	args, _ = json.Marshal(map[string]any{"url": first.URL + "/"})
	p.script("redirect", toolCall{Name: "web_fetch", Args: string(args)})
	srv.prompt(t, sid, "redirect")
	require.Len(t, asked, 3)
	assert.Contains(t, asked[2].texts(), other.URL)
	assert.Zero(t, conns.Load(), "a refused redirect hop was connected to")
}
