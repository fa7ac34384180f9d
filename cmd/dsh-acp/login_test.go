package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zalando/go-keyring"

	"github.com/dsh-acp/dsh-acp/fixtures"
	"github.com/dsh-acp/dsh-acp/internal/credentials"
)

// promptIn serves run() in process with e and returns the prompt's answer
// line.
func promptIn(t *testing.T, e map[string]string) string {
	t.Helper()
	s := start(t, []string{"--sessions-root", t.TempDir()}, e)
	_, sid := s.open(t.TempDir())
	lines := s.prompt(sid, "hi")
	return lines[len(lines)-1]
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The environment's key wins over the stored one; the stored one (here in
// go-keyring's mock, the OS credential store's stand-in) serves when the
// environment has none; a sign-out in between takes effect at once.
func TestKeyPrecedenceEnvironmentThenStored(t *testing.T) {
	keyring.MockInit()
	api := newMockDeepSeek(t, "sk-stored")
	home := t.TempDir()
	// A session bus as on a desktop (never dialled: the mock answers).
	base := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "cfg"), "DEEPSEEK_BASE_URL": api.URL,
		"DBUS_SESSION_BUS_ADDRESS": "unix:path=" + filepath.Join(home, "bus")}
	store, err := credentialStore(env(base))
	require.NoError(t, err)
	where, err := store.Save("sk-stored")
	require.NoError(t, err)
	require.Equal(t, credentials.KindKeyring, where.Kind)

	withEnv := map[string]string{"DEEPSEEK_API_KEY": "sk-env"}
	for k, v := range base {
		withEnv[k] = v
	}
	promptIn(t, withEnv)
	assert.Equal(t, []string{"Bearer sk-env"}, api.seen("/chat/completions"), "the environment's key wins")

	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`, promptIn(t, base))
	assert.Equal(t, []string{"Bearer sk-env", "Bearer sk-stored"}, api.seen("/chat/completions"), "then the stored key")

	var out bytes.Buffer
	require.Equal(t, 0, run([]string{"--logout"}, strings.NewReader(""), &out, &out, env(base)), out.String())
	assert.Contains(t, out.String(), "Signed out: the key was removed from "+credentials.KeyringName(runtime.GOOS))
	_, err = keyring.Get(credentials.Service, credentials.Account)
	require.ErrorIs(t, err, keyring.ErrNotFound)
	assert.Contains(t, promptIn(t, base), `"code":-32000`)
}

// --login reads a key from a pipe too (no terminal: no echo to turn off),
// and refuses what cannot be a key before sending it anywhere.
func TestLoginFromPipe(t *testing.T) {
	keyring.MockInit()
	api := newMockDeepSeek(t, "sk-piped")
	home := t.TempDir()
	e := env(map[string]string{"HOME": home, "DEEPSEEK_BASE_URL": api.URL, credentialStoreEnv: "file"})
	var out bytes.Buffer
	require.Equal(t, 1, run([]string{"--login"}, strings.NewReader("sk-a b\n"), &out, &out, e), out.String())
	assert.Contains(t, out.String(), "holds a space")
	assert.Empty(t, api.seen("/models"))

	out.Reset()
	require.Equal(t, 0, run([]string{"--login"}, strings.NewReader("sk-piped\n"), &out, &out, e), out.String())
	store, err := credentialStore(e)
	require.NoError(t, err)
	key, where, err := store.Load()
	require.NoError(t, err)
	assert.Equal(t, "sk-piped", key)
	assert.Equal(t, filepath.Join(home, ".config", "dsh-acp", credentials.FileName), where.Path)

	out.Reset()
	require.Equal(t, 1, run([]string{"--login"}, strings.NewReader(""), &out, &out, e), "EOF cancels")
	assert.Contains(t, out.String(), "sign-in cancelled")
	require.Equal(t, 2, run([]string{"--login", "--logout"}, strings.NewReader(""), &out, &out, e))
	_, err = credentialStore(env(map[string]string{credentialStoreEnv: "vault"}))
	require.Error(t, err)
}

// mockDeepSeek is a loopback DeepSeek: /models answers 200 to the keys it
// accepts and 401 to others; /chat/completions streams a recorded answer.
// It records the Authorization header of each request.
type mockDeepSeek struct {
	*httptest.Server
	mu    sync.Mutex
	auths map[string][]string // path → Authorization headers
}

func newMockDeepSeek(t *testing.T, accept string) *mockDeepSeek {
	t.Helper()
	sse, err := fs.ReadFile(fixtures.DeepSeek(), "reasoning-text.sse")
	require.NoError(t, err)
	m := &mockDeepSeek{auths: map[string][]string{}}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		m.mu.Lock()
		m.auths[r.URL.Path] = append(m.auths[r.URL.Path], auth)
		m.mu.Unlock()
		if auth != "Bearer "+accept {
			http.Error(w, `{"error":{"message":"Authentication Fails","type":"authentication_error"}}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/models":
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"deepseek-chat","object":"model"}]}`))
		case "/chat/completions":
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(sse)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mockDeepSeek) seen(path string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.auths[path]...)
}

// On a Linux without a session bus the keyring is not asked (go-keyring
// would run dbus-launch at every lookup); a bus in the environment or the
// runtime directory is.
func TestNoSessionBus(t *testing.T) {
	assert.Empty(t, noSessionBus("darwin", env(nil)))
	assert.Empty(t, noSessionBus("windows", env(nil)))
	assert.Empty(t, noSessionBus("linux", env(map[string]string{"DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1/bus"})))
	rt := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(rt, "bus"), nil, 0o600))
	assert.Empty(t, noSessionBus("linux", env(map[string]string{"XDG_RUNTIME_DIR": rt})))
	if _, err := os.Stat(fmt.Sprintf("/run/user/%d", os.Getuid())); err == nil {
		t.Skip("this machine has a user runtime directory; the no-bus case is not reproducible here")
	}
	assert.Contains(t, noSessionBus("linux", env(map[string]string{"XDG_RUNTIME_DIR": t.TempDir(), "DBUS_SESSION_BUS_ADDRESS": "autolaunch:"})), "no D-Bus session bus")
}
