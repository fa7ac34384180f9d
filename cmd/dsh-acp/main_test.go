package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/fixtures"
	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/acpschema"
	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestFlagValidation(t *testing.T) {
	var stderr bytes.Buffer
	cases := map[string][]string{
		"--replay needs at least one scenario path":                            {"--replay"},
		"--update only applies with --replay":                                  {"--update"},
		"--model-replay-override and --model-replay-child need --model-replay": {"--model-replay-override", "x.json"},
		`unexpected arguments ["stray"] (did you mean --replay?)`:              {"stray"},
		"composition \"nope\" is neither a built-in":                           {"--composition", "nope", "--sessions-root", t.TempDir()},
		"llm-replay: fixture not found: /does/not/exist.jsonl":                 {"--model-replay", "/does/not/exist.jsonl", "--sessions-root", t.TempDir()},
	}
	for want, args := range cases {
		stderr.Reset()
		code := run(args, strings.NewReader(""), io.Discard, &stderr, env(map[string]string{"HOME": t.TempDir()}))
		require.NotZero(t, code, "%v", args)
		require.Contains(t, stderr.String(), want, "%v", args)
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	require.Equal(t, 0, run([]string{"--version"}, nil, &out, io.Discard, env(nil)))
	require.Equal(t, "dsh-acp "+version+"\n", out.String())
}

// --help names the environment variables and the files, resolved for
// this environment.
func TestHelpListsEnvironmentAndFiles(t *testing.T) {
	var stderr bytes.Buffer
	run([]string{"--help"}, strings.NewReader(""), io.Discard, &stderr, env(map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "/state"}))
	for _, want := range []string{"DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "DSH_ACP_CONFIG", "DSH_ACP_LOG", "XDG_STATE_HOME", "CODEX_HOME",
		"config        /home/u/.config/dsh-acp/config.json", "sessions      /state/dsh-acp/sessions", "permissions   /state/dsh-acp/permissions.json"} {
		require.Contains(t, stderr.String(), want)
	}
}

// editor drives run() over pipes like an editor would, through an
// acpclient connection that validates every frame run() wrote at cleanup.
type editor struct {
	t   *testing.T
	c   *acpclient.Conn
	pos int // the next output line until reads
}

func start(t *testing.T, args []string, e map[string]string) *editor {
	t.Helper()
	schema, err := acpschema.Stable()
	require.NoError(t, err)
	serve := func(_ context.Context, r io.Reader, w io.Writer) error {
		if code := run(args, r, w, io.Discard, env(e)); code != 0 {
			return fmt.Errorf("run exited with code %d", code)
		}
		return nil
	}
	s := &editor{t: t, c: acpclient.Serve(serve, acpclient.Options{Schema: schema})}
	t.Cleanup(func() {
		_ = s.c.CloseWrite()
		select {
		case <-s.c.Stopped():
		case <-time.After(10 * time.Second):
			t.Error("run did not return at EOF")
		}
		s.c.Report(t)
	})
	return s
}

func (s *editor) send(line string) {
	require.NoError(s.t, s.c.SendLines([]byte(line)))
}

// until reads lines until one contains want, returning all lines read.
func (s *editor) until(want string) []string {
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		l, err := s.c.NextLine(ctx, s.pos)
		if errors.Is(err, io.EOF) {
			s.t.Fatalf("stdout ended before %q; got %v", want, got)
		}
		if err != nil {
			s.t.Fatalf("timed out waiting for %q; got %v", want, got)
		}
		s.pos++
		got = append(got, string(l))
		if strings.Contains(string(l), want) {
			return got
		}
	}
}

// open initializes and opens a session in cwd, returning the initialize
// response line and the session id.
func (s *editor) open(cwd string) (initialized, sessionID string) {
	s.t.Helper()
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	initialized = s.until(`"id":0`)[0]
	s.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":` + jsonString(cwd) + `,"mcpServers":[]}}`)
	lines := s.until(`"id":1`)
	var r struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	require.NoError(s.t, json.Unmarshal([]byte(lines[len(lines)-1]), &r))
	return initialized, r.Result.SessionID
}

// prompt sends one text prompt (request id 2) and returns every line up
// to its response, which is the last.
func (s *editor) prompt(sessionID, text string) []string {
	s.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + sessionID + `","prompt":[{"type":"text","text":` + jsonString(text) + `}]}}`)
	return s.until(`"id":2`)
}

func TestMissingKeyPromptIsAuthRequired(t *testing.T) {
	cwd := t.TempDir()
	s := start(t, []string{"--sessions-root", t.TempDir()}, map[string]string{"HOME": t.TempDir()})
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	s.until(`"id":0`)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + cwd + `","mcpServers":[]}}`)
	var sid string
	lines := s.until(`"id":1`)
	var r struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &r))
	sid = r.Result.SessionID
	s.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"hi"}]}}`)
	lines = s.until(`"id":2`)
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				AuthMethods []map[string]any `json:"authMethods"`
			} `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &e))
	require.Equal(t, -32000, e.Error.Code, "auth_required, so that the client offers the sign-in")
	require.Contains(t, e.Error.Message, "dsh-acp --login")
	require.Contains(t, e.Error.Message, "set DEEPSEEK_API_KEY")
	require.Len(t, e.Error.Data.AuthMethods, 1, "env_var only: this client runs no terminal sign-in")
	require.Equal(t, "env_var", e.Error.Data.AuthMethods[0]["type"])
}

// TestLiveProviderAgainstDeepSeekSSE serves a recorded DeepSeek SSE stream
// from an httptest server and checks the whole path: request to the API,
// chunks to session/update, the stop reason, and the persisted log.
func TestLiveProviderAgainstDeepSeekSSE(t *testing.T) {
	sse, err := fs.ReadFile(fixtures.DeepSeek(), "reasoning-text.sse")
	require.NoError(t, err)
	var mu sync.Mutex
	var bodies []string
	var warmed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/models" {
			// The connection is opened ahead of the first prompt.
			warmed.Store(r.Header.Get("Authorization") == "Bearer sk-test")
			_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		require.Equal(t, "/chat/completions", r.URL.Path)
		require.Equal(t, "Bearer sk-test", r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(sse)
	}))
	defer srv.Close()

	cwd, sessions := t.TempDir(), t.TempDir()
	s := start(t, []string{"--sessions-root", sessions}, map[string]string{
		"HOME": t.TempDir(), "DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": srv.URL,
	})
	initialized, sid := s.open(cwd)
	require.Contains(t, initialized, `"agentInfo":{"name":"dsh-acp"`)
	lines := s.prompt(sid, "Say hello")
	require.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`, lines[len(lines)-1])
	var thought, message int
	for _, l := range lines {
		thought += strings.Count(l, `"agent_thought_chunk"`)
		message += strings.Count(l, `"agent_message_chunk"`)
	}
	require.Positive(t, thought)
	require.Positive(t, message)

	require.Eventually(t, warmed.Load, 5*time.Second, time.Millisecond, "the session warmed the API connection")
	mu.Lock()
	require.Len(t, bodies, 1)
	require.Contains(t, bodies[0], `"messages":[{"role":"system","content":"You are dsh-acp`)
	require.Contains(t, bodies[0], `{"role":"user","content":"Say hello"}`)
	require.Contains(t, bodies[0], `"stream":true,"stream_options":{"include_usage":true}`)
	mu.Unlock()

	_ = s.c.CloseWrite()
	select {
	case <-s.c.Stopped():
		require.NoError(t, s.c.ServeErr())
	case <-time.After(10 * time.Second):
		t.Fatal("server did not exit at EOF")
	}
	files, _ := filepath.Glob(filepath.Join(sessions, "*", sid+".jsonl"))
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.Contains(t, string(data), `"type":"turn/end"`)
	require.Contains(t, string(data), `"reason":{"kind":"completed"}`)
}
