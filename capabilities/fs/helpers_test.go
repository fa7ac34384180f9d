package fs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// fakeEnv is the calling session as the tools see it.
type fakeEnv struct {
	cwd string
	log *session.Log
}

func (e *fakeEnv) Cwd() string       { return e.cwd }
func (e *fakeEnv) Log() *session.Log { return e.log }

func (e *fakeEnv) Host() *capabilities.Host { return nil }

func newEnv(cwd string) *fakeEnv {
	return &fakeEnv{cwd: cwd, log: session.NewLog(session.Header{ID: "test", Cwd: cwd}, func() int64 { return 0 }, nil)}
}

// harness is one session's fs tools in a temporary working directory.
type harness struct {
	t     *testing.T
	dir   string
	env   *fakeEnv
	tools []capabilities.Tool
	reg   *capabilities.Registry
	files *files

	mu      sync.Mutex
	changes []Change
	calls   int
}

func newHarness(t *testing.T, confine bool) *harness {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return newHarnessIn(t, dir, confine)
}

func newHarnessIn(t *testing.T, dir string, confine bool) *harness {
	t.Helper()
	h := &harness{t: t, dir: dir, env: newEnv(dir)}
	h.tools = New(Options{Confine: confine, OnChange: func(_ context.Context, ch Change) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.changes = append(h.changes, ch)
	}})
	h.reg = capabilities.NewRegistry(h.tools...)
	h.files = h.tools[0].(*readTool).files
	return h
}

// call runs a tool through the registry pipeline with JSON-encoded args.
func (h *harness) call(name string, args any) capabilities.Outcome {
	return h.callCtx(context.Background(), name, args)
}

func (h *harness) callCtx(ctx context.Context, name string, args any) capabilities.Outcome {
	h.t.Helper()
	var raw string
	switch a := args.(type) {
	case string:
		raw = a
	default:
		b, err := json.Marshal(a)
		require.NoError(h.t, err)
		raw = string(b)
	}
	h.calls++
	return h.reg.Execute(ctx, h.env, "call_"+strconv.Itoa(h.calls), name, raw)
}

// ok runs a call that must succeed and returns its text.
func (h *harness) ok(name string, args any) string {
	h.t.Helper()
	out := h.call(name, args)
	require.False(h.t, out.IsError, "unexpected error: %s", text(out))
	return text(out)
}

// fails runs a call that must fail with msg (without the "Error: " prefix)
// and code ("" for a plain error).
func (h *harness) fails(name string, args any, msg, code string) {
	h.t.Helper()
	out := h.call(name, args)
	require.True(h.t, out.IsError, "expected an error, got %q", text(out))
	require.Equal(h.t, "Error: "+msg, text(out))
	if code == "" {
		require.Nil(h.t, out.Error)
		return
	}
	require.Equal(h.t, &session.ErrorInfo{Name: "FsError", Code: code}, out.Error)
}

// observe records the current version of rel as seen by the session, as
// a read would.
func (h *harness) observe(rel string) {
	h.t.Helper()
	files, err := h.files.confinedTo(&capabilities.Call{}, h.dir)
	require.NoError(h.t, err)
	info, err := files.Stat(context.Background(), h.path(rel))
	require.NoError(h.t, err)
	require.True(h.t, info.Exists)
	h.files.policy.observe(info.ID, info.Version)
}

func (h *harness) path(rel string) string { return filepath.Join(h.dir, rel) }

func (h *harness) writeFile(rel string, content string) string {
	h.t.Helper()
	p := h.path(rel)
	require.NoError(h.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(h.t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func (h *harness) readFile(rel string) string {
	h.t.Helper()
	b, err := os.ReadFile(h.path(rel))
	require.NoError(h.t, err)
	return string(b)
}

func text(o capabilities.Outcome) string {
	if len(o.Content) != 1 {
		return ""
	}
	return o.Content[0].Text
}

// readText is the expected read result text.
func readText(display, body, footer string) string {
	if body == "" {
		return "<path>" + display + "</path>\n<type>file</type>\n<content>\n" + footer + "\n</content>"
	}
	return "<path>" + display + "</path>\n<type>file</type>\n<content>\n" + body + "\n\n" + footer + "\n</content>"
}
