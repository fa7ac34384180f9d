//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/credentials"
)

// userEnv is a made-up user's environment: home, config and state in a
// temporary directory, the file store (no OS keyring is reachable or
// touched: no D-Bus session either), the API at base, no API key.
func userEnv(t *testing.T, base string) (env []string, configDir string) {
	home := t.TempDir()
	configDir = filepath.Join(home, "cfg")
	return []string{
		execAgentEnv + "=1",
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + configDir,
		"XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"DBUS_SESSION_BUS_ADDRESS=unix:path=" + filepath.Join(home, "no-bus"),
		credentialStoreEnv + "=file",
		"DEEPSEEK_BASE_URL=" + base,
		"TERM=dumb",
	}, filepath.Join(configDir, "dsh-acp")
}

// loginOnPTY runs dsh-acp --login on a pseudo-terminal, types key and
// Enter once the prompt shows, and returns what the terminal showed and
// the exit error.
func loginOnPTY(t *testing.T, env []string, key string) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "--login")
	cmd.Env = env
	ptmx, err := pty.Start(cmd)
	require.NoError(t, err)
	defer ptmx.Close()
	var out bytes.Buffer
	read := make(chan error, 1)
	prompted := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		once := sync.Once{}
		for {
			n, err := ptmx.Read(buf)
			out.Write(buf[:n])
			if strings.Contains(out.String(), "(input hidden): ") {
				once.Do(func() { close(prompted) })
			}
			if err != nil {
				read <- err // EIO once the child is gone
				return
			}
		}
	}()
	select {
	case <-prompted:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("no prompt on the terminal; it showed %q", out.String())
	}
	_, err = ptmx.Write([]byte(key + "\r"))
	require.NoError(t, err)
	werr := make(chan error, 1)
	go func() { werr <- cmd.Wait() }()
	select {
	case err = <-werr:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("--login did not exit; the terminal showed %q", out.String())
	}
	select {
	case <-read:
	case <-time.After(5 * time.Second):
	}
	return out.String(), err
}

// serveAgent spawns dsh-acp serving ACP over stdio in env.
func serveAgent(t *testing.T, env []string, caps any) *acpclient.Process {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "--sessions-root", t.TempDir())
	cmd.Env = env
	cmd.Dir = t.TempDir()
	p, err := acpclient.Spawn(cmd, acpclient.Options{ClientCapabilities: caps})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(10 * time.Second) })
	return p
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// prompt opens a session and sends one prompt, returning its result or
// error.
func promptOnce(t *testing.T, p *acpclient.Process) (json.RawMessage, error) {
	t.Helper()
	ctx := callCtx(t)
	_, err := p.Initialize(ctx)
	require.NoError(t, err)
	res, err := p.Call(ctx, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})
	require.NoError(t, err)
	var s struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(res, &s))
	return p.Call(ctx, "session/prompt", map[string]any{"sessionId": s.SessionID, "prompt": []map[string]any{{"type": "text", "text": "hi"}}})
}

// The whole sign-in as a user sees it, on a real pseudo-terminal: a wrong
// key is refused and nothing stored; the right one is checked against the
// endpoint DEEPSEEK_BASE_URL names, never echoed, stored in a 0600 file
// (no OS keyring here), and the next agent process uses it for its model
// calls; --logout forgets it and the next prompt is auth_required.
func TestLoginOnPseudoTerminalThenServeThenLogout(t *testing.T) {
	const good, bad = "sk-good-0123456789", "sk-typo-0123456789"
	api := newMockDeepSeek(t, good)
	env, dir := userEnv(t, api.URL)
	keyFile := filepath.Join(dir, credentials.FileName)

	shown, err := loginOnPTY(t, env, bad)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "a refused key fails the sign-in: %s", shown)
	assert.Contains(t, shown, "refused the key (HTTP 401)")
	assert.Contains(t, shown, "nothing was stored")
	assert.NotContains(t, shown, bad, "the key is not echoed")
	assert.NoFileExists(t, keyFile)
	assert.Equal(t, []string{"Bearer " + bad}, api.seen("/models"), "one check, against the configured endpoint")

	shown, err = loginOnPTY(t, env, good)
	require.NoError(t, err, shown)
	t.Logf("the terminal showed:\n%s", shown)
	assert.Contains(t, shown, "Signed in: the key works and is stored in the file "+keyFile+" (mode 0600")
	assert.NotContains(t, shown, good, "the key is not echoed")
	b, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	assert.Equal(t, good+"\n", string(b))
	fi, err := os.Stat(keyFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// The next process, without DEEPSEEK_API_KEY, uses the stored key.
	p := serveAgent(t, env, map[string]any{"auth": map[string]any{"terminal": true}})
	res, err := promptOnce(t, p)
	require.NoError(t, err, p.Stderr())
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(res))
	assert.Equal(t, []string{"Bearer " + good}, api.seen("/chat/completions"))
	require.NoError(t, p.Close(10*time.Second))

	// --logout forgets it.
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "--logout")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "Signed out: the key was removed from the file "+keyFile)
	assert.NoFileExists(t, keyFile)

	// A client without auth capabilities opens a session, and its prompt
	// answers auth_required; no model call is made.
	p = serveAgent(t, env, map[string]any{})
	_, err = promptOnce(t, p)
	var rpc *acpclient.Error
	require.True(t, errors.As(err, &rpc), "%v", err)
	assert.Equal(t, -32000, rpc.Code)
	assert.Len(t, api.seen("/chat/completions"), 1)
}

// Ctrl-D or Ctrl-C at the prompt cancels: exit status non-zero, one line
// saying so, nothing stored, no request sent.
func TestLoginCancelledOnPseudoTerminal(t *testing.T) {
	for name, keys := range map[string]string{"ctrl-d": "\x04", "ctrl-c": "\x03"} {
		t.Run(name, func(t *testing.T) {
			api := newMockDeepSeek(t, "sk-x")
			env, dir := userEnv(t, api.URL)
			shown, err := loginOnPTY(t, env, keys)
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, shown)
			assert.Contains(t, shown, "sign-in cancelled; nothing was stored")
			assert.NoFileExists(t, filepath.Join(dir, credentials.FileName))
			assert.Empty(t, api.seen("/models"))
		})
	}
}
