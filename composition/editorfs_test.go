package composition_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/composition"
	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/acpschema"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// editorWorld is the default composition served to an editor that hosts
// the files (acpclient.FS over the project and its extra roots, with
// unsaved buffers), over a real jsonl store.
type editorWorld struct {
	t     *testing.T
	dir   string // the project (session cwd)
	extra string // an additional directory
	out   string // a directory outside every root
	store string // the sessions root
	p     *scriptedProvider
	fs    *acpclient.FS
}

func newEditorWorld(t *testing.T) *editorWorld {
	t.Helper()
	base := t.TempDir()
	w := &editorWorld{t: t, dir: filepath.Join(base, "project"), extra: filepath.Join(base, "extra"),
		out: filepath.Join(base, "outside"), store: filepath.Join(base, "sessions"), p: newProvider()}
	for _, d := range []string{w.dir, w.extra, w.out} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	// The editor would serve any path (as Zed serves any open buffer): the
	// agent's own confinement is what is tested.
	w.fs = acpclient.NewFS("/")
	return w
}

// connect serves a fresh default-composition process on the world's store
// and initializes it; caps nil advertises the FS.
func (w *editorWorld) connect(caps any) *acpclient.Conn {
	t := w.t
	t.Helper()
	comp, ok := composition.Builtin("default")
	require.True(t, ok)
	confiner, err := sandbox.NewDefaultProvider()
	require.NoError(t, err)
	home := t.TempDir()
	srv := comp.NewServer(composition.ServerOptions{Provider: w.p, Store: openStore(t, w.store), Log: zerolog.Nop(), Version: "test",
		LaunchDir: w.dir, Confiner: confiner, Getenv: func(k string) string {
			if k == "HOME" {
				return home
			}
			return ""
		}})
	stable, err := acpschema.Stable()
	require.NoError(t, err)
	c := acpclient.Serve(srv.Serve, acpclient.Options{FS: w.fs, Schema: stable, ClientCapabilities: caps})
	t.Cleanup(func() {
		_ = c.CloseWrite()
		<-c.Stopped()
		c.Report(t) // every frame the agent wrote, against the ACP schema
	})
	_, err = c.Initialize(w.ctx())
	require.NoError(t, err)
	return c
}

func (w *editorWorld) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	w.t.Cleanup(cancel)
	return ctx
}

// newSession opens a session on the project with extra roots.
func (w *editorWorld) newSession(c *acpclient.Conn, extra ...string) string {
	w.t.Helper()
	params := map[string]any{"cwd": w.dir, "mcpServers": []any{}}
	if len(extra) > 0 {
		params["additionalDirectories"] = extra
	}
	raw, err := c.Call(w.ctx(), "session/new", params)
	require.NoError(w.t, err)
	var r struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(w.t, json.Unmarshal(raw, &r))
	return r.SessionID
}

// run makes the model call tool with args for a fresh prompt, waits for
// the turn, and returns the call's logged result and the fs/* requests the
// editor served during the turn.
func (w *editorWorld) run(c *acpclient.Conn, sid, tool, args string) (toolResult, []acpclient.FSCall) {
	w.t.Helper()
	before := len(w.fs.Calls())
	prompt := tool + " " + args
	w.p.script(prompt, toolCall{Name: tool, Args: args})
	w.prompt(c, sid, prompt)
	rs := toolResults(w.t, readLog(w.t, w.store, sid))
	require.NotEmpty(w.t, rs)
	return rs[len(rs)-1], w.fs.Calls()[before:]
}

// prompt sends one prompt and waits for its answer.
func (w *editorWorld) prompt(c *acpclient.Conn, sid, text string) {
	w.t.Helper()
	_, err := c.Call(w.ctx(), "session/prompt", map[string]any{"sessionId": sid,
		"prompt": []any{map[string]any{"type": "text", "text": text}}})
	require.NoError(w.t, err)
}

func readArgs(path string) string { return `{"file_path":` + jsonString(path) + `}` }

func writeArgs(path, content string) string {
	return `{"file_path":` + jsonString(path) + `,"content":` + jsonString(content) + `}`
}

func methods(calls []acpclient.FSCall) []string {
	out := []string{}
	for _, c := range calls {
		out = append(out, c.Method)
	}
	return out
}

func disk(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// An editor that hosts files sees the agent's reads and writes: a read
// returns the unsaved buffer, a write arrives as fs/write_text_file (one
// read and one write request per write, nothing written to disk by the
// agent), and a buffer changed after the read refuses the write by its
// content hash.
func TestEditorFilesReadBuffersAndWriteThroughTheEditor(t *testing.T) {
	w := newEditorWorld(t)
	a := filepath.Join(w.dir, "a.txt")
	require.NoError(t, os.WriteFile(a, []byte("on disk\n"), 0o644))
	w.fs.SetBuffer(a, "unsaved line\n")
	c := w.connect(nil)
	sid := w.newSession(c)

	res, calls := w.run(c, sid, "read", readArgs(a))
	require.False(t, res.IsError, res.text())
	assert.Contains(t, res.text(), "1: unsaved line")
	assert.NotContains(t, res.text(), "on disk")
	assert.Equal(t, []string{"fs/read_text_file"}, methods(calls))

	res, calls = w.run(c, sid, "write", writeArgs(a, "rewritten\n"))
	require.False(t, res.IsError, res.text())
	require.Equal(t, []string{"fs/read_text_file", "fs/write_text_file"}, methods(calls), "a write costs one read and the write itself")
	assert.Equal(t, "rewritten\n", calls[1].Content)
	assert.True(t, calls[1].Buffer, "the write landed in the editor's buffer")
	assert.Equal(t, "on disk\n", disk(t, a), "the agent wrote nothing to disk itself")
	buf, _ := w.fs.Buffer(a)
	assert.Equal(t, "rewritten\n", buf)

	// A second write right after needs no extra read for the version of
	// the agent's own write: the editor's buffer is read once, as before.
	res, calls = w.run(c, sid, "write", writeArgs(a, "again\n"))
	require.False(t, res.IsError, res.text())
	assert.Equal(t, []string{"fs/read_text_file", "fs/write_text_file"}, methods(calls))

	// The user types in the buffer after the agent's last look: refused.
	w.fs.SetBuffer(a, "the user's edit\n")
	res, calls = w.run(c, sid, "write", writeArgs(a, "clobber\n"))
	require.True(t, res.IsError)
	assert.Contains(t, string(res.Error), "FS_STALE_VERSION")
	assert.Equal(t, []string{"fs/read_text_file"}, methods(calls), "no write was sent")
	buf, _ = w.fs.Buffer(a)
	assert.Equal(t, "the user's edit\n", buf)
}

// A path the agent's own confinement refuses never reaches the editor:
// "..", an absolute path outside, a symbolic link leading out (the editor
// would have served each).
func TestEditorFilesConfinementBeforeAnyRequest(t *testing.T) {
	w := newEditorWorld(t)
	secret := filepath.Join(w.out, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("secret\n"), 0o644))
	require.NoError(t, os.Symlink(w.out, filepath.Join(w.dir, "link")))
	c := w.connect(nil)
	sid := w.newSession(c)

	for _, p := range []string{"../outside/secret.txt", secret, "link/secret.txt"} {
		for _, call := range []struct{ tool, args string }{{"read", readArgs(p)}, {"write", writeArgs(p, "pwned\n")}} {
			res, calls := w.run(c, sid, call.tool, call.args)
			assert.True(t, res.IsError, "%s %s: %s", call.tool, p, res.text())
			assert.Empty(t, calls, "%s %s reached the editor", call.tool, p)
		}
	}
	assert.Equal(t, "secret\n", disk(t, secret))
	assert.Empty(t, w.fs.Calls())
}

// A file the disk does not hold is a new file: write creates it through
// the editor in one round trip, its fs/write_text_file; /undo then removes
// it, and restores an overwritten file through the editor.
func TestEditorFilesNewFileAndUndoThroughTheEditor(t *testing.T) {
	w := newEditorWorld(t)
	a := filepath.Join(w.dir, "a.txt")
	require.NoError(t, os.WriteFile(a, []byte("original\n"), 0o644))
	w.fs.SetBuffer(a, "original\n")
	fresh := filepath.Join(w.dir, "sub", "new.txt")
	c := w.connect(nil)
	sid := w.newSession(c)

	res, calls := w.run(c, sid, "write", writeArgs(fresh, "hello\n"))
	require.False(t, res.IsError, res.text())
	require.Equal(t, []string{"fs/write_text_file"}, methods(calls), "one round trip")
	assert.Equal(t, "hello\n", disk(t, fresh), "the editor created it")
	assert.Contains(t, res.text(), "Created file")

	// Next turn: read then overwrite a.txt (in its buffer).
	_, _ = w.run(c, sid, "read", readArgs(a))
	res, _ = w.run(c, sid, "write", writeArgs(a, "changed\n"))
	require.False(t, res.IsError, res.text())
	buf, _ := w.fs.Buffer(a)
	require.Equal(t, "changed\n", buf)

	before := len(w.fs.Calls())
	w.prompt(c, sid, "/undo")
	calls = w.fs.Calls()[before:]
	assert.Equal(t, []string{"fs/read_text_file", "fs/write_text_file"}, methods(calls), "undo checks the buffer's hash, then restores through the editor")
	buf, _ = w.fs.Buffer(a)
	assert.Equal(t, "original\n", buf)
}

// additionalDirectories are extra confined roots: reads and writes beneath
// them go through the editor, a path outside every root is refused, bad
// entries are -32602, and the roots come back with session/load.
func TestEditorFilesExtraRootsPersistAcrossLoad(t *testing.T) {
	w := newEditorWorld(t)
	b := filepath.Join(w.extra, "b.txt")
	require.NoError(t, os.WriteFile(b, []byte("in the extra root\n"), 0o644))
	c := w.connect(nil)

	for _, bad := range []string{"relative/dir", filepath.Join(w.extra, "missing"), b} {
		_, err := c.Call(w.ctx(), "session/new", map[string]any{"cwd": w.dir, "mcpServers": []any{}, "additionalDirectories": []string{bad}})
		var rpc *acpclient.Error
		require.ErrorAs(t, err, &rpc, bad)
		assert.Equal(t, -32602, rpc.Code, bad)
		assert.Contains(t, rpc.Message, "additionalDirectories", bad)
	}

	sid := w.newSession(c, w.extra)
	res, calls := w.run(c, sid, "read", readArgs(b))
	require.False(t, res.IsError, res.text())
	assert.Contains(t, res.text(), "in the extra root")
	assert.Equal(t, []string{"fs/read_text_file"}, methods(calls))
	res, calls = w.run(c, sid, "write", writeArgs(filepath.Join(w.extra, "c.txt"), "made\n"))
	require.False(t, res.IsError, res.text())
	assert.Equal(t, []string{"fs/write_text_file"}, methods(calls))
	res, calls = w.run(c, sid, "read", readArgs(filepath.Join(w.out, "x.txt")))
	assert.True(t, res.IsError)
	assert.Empty(t, calls)

	// A later process loads the session without repeating the roots.
	_ = c.CloseWrite()
	<-c.Stopped()
	c2 := w.connect(nil)
	_, err := c2.Call(w.ctx(), "session/load", map[string]any{"sessionId": sid, "cwd": w.dir, "mcpServers": []any{}})
	require.NoError(t, err)
	res, calls = w.run(c2, sid, "read", readArgs(filepath.Join(w.extra, "c.txt")))
	require.False(t, res.IsError, res.text())
	assert.Contains(t, res.text(), "made")
	assert.Len(t, calls, 1)
	logged := ofType(readLog(t, w.store, sid), "workspace/roots")
	assert.Equal(t, []string{`{"roots":[` + jsonString(w.extra) + `]}`}, logged, "recorded once")
}

// A client that advertises only reads gets reads through the editor and
// local writes; one that advertises no fs gets neither request.
func TestEditorFilesFallBackPerCapability(t *testing.T) {
	w := newEditorWorld(t)
	a := filepath.Join(w.dir, "a.txt")
	require.NoError(t, os.WriteFile(a, []byte("disk\n"), 0o644))
	w.fs.SetBuffer(a, "buffer\n")
	c := w.connect(map[string]any{"fs": map[string]bool{"readTextFile": true, "writeTextFile": false}})
	sid := w.newSession(c)
	res, calls := w.run(c, sid, "read", readArgs(a))
	require.False(t, res.IsError, res.text())
	assert.Contains(t, res.text(), "buffer")
	assert.Equal(t, []string{"fs/read_text_file"}, methods(calls))
	res, calls = w.run(c, sid, "write", writeArgs(a, "local write\n"))
	require.False(t, res.IsError, res.text())
	assert.Equal(t, []string{"fs/read_text_file"}, methods(calls))
	assert.Equal(t, "local write\n", disk(t, a))

	c2 := w.connect(map[string]any{})
	sid2 := w.newSession(c2)
	before := len(w.fs.Calls())
	res, _ = w.run(c2, sid2, "read", readArgs(a))
	require.False(t, res.IsError, res.text())
	assert.True(t, strings.Contains(res.text(), "local write"))
	assert.Len(t, w.fs.Calls(), before)
}
