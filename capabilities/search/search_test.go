package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
)

// TestMain lets the test binary serve as the Landlock launcher.
func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	os.Exit(m.Run())
}

type env struct{ cwd string }

func (e env) Cwd() string       { return e.cwd }
func (e env) Log() *session.Log { return nil }

func (e env) Host() *capabilities.Host { return nil }

func needRG(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("ripgrep not installed")
	}
}

// tree writes files (path → content) under a fresh directory.
func tree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
	return dir
}

// run executes the named tool through a registry, as the agent does.
func call(t testing.TB, o Options, cwd, name, args string) capabilities.Outcome {
	t.Helper()
	r := capabilities.NewRegistry(New(o)...)
	return r.Execute(context.Background(), env{cwd}, "c1", name, args)
}

func text(o capabilities.Outcome) string {
	var b strings.Builder
	for _, bl := range o.Content {
		b.WriteString(bl.Text)
	}
	return b.String()
}

func TestGrepFindsMatchesSortedWithLineNumbersAndHonoursGitignore(t *testing.T) {
	needRG(t)
	dir := tree(t, map[string]string{
		"b.go":         "package b\n// TODO: b\n",
		"a.go":         "package a\nfunc A() {}\n// TODO: a\n",
		"sub/c.txt":    "nothing\nTODO c\n",
		"ignored.go":   "// TODO: ignored\n",
		".gitignore":   "ignored.go\n",
		".hidden/d.go": "// TODO hidden\n",
	})
	out := call(t, Options{}, dir, "grep", `{"pattern":"TODO"}`)
	require.False(t, out.IsError, text(out))
	require.Equal(t, "a.go:3: // TODO: a\nb.go:2: // TODO: b\nsub/c.txt:2: TODO c\n[3 matches in 3 files]", text(out))

	out = call(t, Options{}, dir, "grep", `{"pattern":"todo","case_insensitive":true,"glob":"*.go","path":"."}`)
	require.Equal(t, "a.go:3: // TODO: a\nb.go:2: // TODO: b\n[2 matches in 2 files]", text(out), "a basename glob keeps .gitignore")

	out = call(t, Options{}, dir, "grep", `{"pattern":"A()","fixed_strings":true,"path":"a.go"}`)
	require.Equal(t, "a.go:2: func A() {}\n[1 match in 1 file]", text(out))

	out = call(t, Options{}, dir, "grep", `{"pattern":"nowhere-to-be-found"}`)
	require.False(t, out.IsError)
	require.Equal(t, "No matches found.", text(out))
}

func TestGrepBoundsResultsAndSaysWhatWasCut(t *testing.T) {
	needRG(t)
	files := map[string]string{}
	for i := range 10 {
		files[fmt.Sprintf("f%02d.txt", i)] = strings.Repeat("hit\n", 8)
	}
	files["long.txt"] = "hit " + strings.Repeat("x", 1000) + "\n"
	dir := tree(t, files)

	out := call(t, Options{PerFile: 3, MaxResults: 1000, MaxLine: 20}, dir, "grep", `{"pattern":"hit"}`)
	got := text(out)
	require.Contains(t, got, "f00.txt:3: hit\n")
	require.NotContains(t, got, "f00.txt:4:")
	require.Contains(t, got, "long.txt:1: hit xxxxxxxxxxxxxxxx… (line cut at 20 chars)")
	require.True(t, strings.HasSuffix(got, "[31 matches in 11 files; 10 files reached the limit of 3 matches per file]"), got)

	out = call(t, Options{MaxResults: 5}, dir, "grep", `{"pattern":"hit"}`)
	got = text(out)
	require.Equal(t, 5, strings.Count(got, ": hit"), got)
	require.Contains(t, got, "results cut at 5 matches; more exist")
}

func TestGrepRejectedRegexIsAReadableError(t *testing.T) {
	needRG(t)
	dir := tree(t, map[string]string{"a.txt": "x\n"})
	out := call(t, Options{}, dir, "grep", `{"pattern":"foo(["}`)
	require.True(t, out.IsError)
	require.Contains(t, text(out), "Error: grep failed: invalid regular expression (use fixed_strings for a literal):")
	require.Contains(t, text(out), "regex parse error")
}

func TestMissingRipgrepIsAClearError(t *testing.T) {
	dir := tree(t, map[string]string{"a.txt": "x\n"})
	for _, tool := range []string{"grep", "glob"} {
		out := call(t, Options{RG: "rg-not-installed-anywhere"}, dir, tool, `{"pattern":"x"}`)
		require.True(t, out.IsError)
		require.Contains(t, text(out), "Error: ripgrep (rg) is not installed or not in PATH; install the ripgrep package")
	}
}

func TestGrepSkipsAHugeFileAndStillAnswers(t *testing.T) {
	needRG(t)
	dir := tree(t, map[string]string{"small.txt": "needle\n"})
	// A 2 GB sparse file, no disk used: over --max-filesize, never read.
	f, err := os.Create(filepath.Join(dir, "huge.log"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(2<<30))
	_, err = f.WriteAt([]byte("needle\n"), 2<<30-7)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	start := time.Now()
	out := call(t, Options{}, dir, "grep", `{"pattern":"needle"}`)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Equal(t, "small.txt:1: needle\n[1 match in 1 file]", text(out))
}

func TestGrepOneHugeLineIsBounded(t *testing.T) {
	needRG(t)
	// A 3 MB single-line file: its JSON record is over maxRecord.
	dir := tree(t, map[string]string{"min.js": "needle" + strings.Repeat("y", 3<<20) + "\n", "a.txt": "needle\n"})
	out := call(t, Options{}, dir, "grep", `{"pattern":"needle"}`)
	require.Equal(t, "a.txt:1: needle\n[1 match in 1 file; 1 matched line too long to show]", text(out))
}

func TestGlobListsSortedPathsBoundedAndHonoursGitignore(t *testing.T) {
	needRG(t)
	dir := tree(t, map[string]string{
		"z.go": "", "a.go": "", "sub/b.go": "", "sub/c.txt": "", "gen/x.go": "", ".gitignore": "gen/\n",
	})
	out := call(t, Options{}, dir, "glob", `{"pattern":"*.go"}`)
	require.False(t, out.IsError, text(out))
	require.Equal(t, "a.go\nsub/b.go\nz.go", text(out))

	out = call(t, Options{}, dir, "glob", `{"pattern":"*.go","path":"sub"}`)
	require.Equal(t, "sub/b.go", text(out))

	out = call(t, Options{MaxResults: 2}, dir, "glob", `{"pattern":"*"}`)
	got := text(out)
	require.Equal(t, 2, strings.Count(got, "\n"), got)
	require.Contains(t, got, "[results cut at 2 paths; more exist — narrow the pattern or path]")

	out = call(t, Options{}, dir, "glob", `{"pattern":"sub/*.txt"}`)
	require.Equal(t, "sub/c.txt", text(out))

	out = call(t, Options{}, dir, "glob", `{"pattern":"*.{txt,go}","path":"sub"}`)
	require.Equal(t, "sub/b.go\nsub/c.txt", text(out))

	out = call(t, Options{}, dir, "glob", `{"pattern":"*.rs"}`)
	require.Equal(t, "No files found.", text(out))

	out = call(t, Options{}, dir, "glob", `{"pattern":"*.go","path":"missing-dir"}`)
	require.True(t, out.IsError)
	require.Contains(t, text(out), "missing-dir")
}

func TestTimeoutKillsTheSearch(t *testing.T) {
	dir := t.TempDir()
	// A stand-in rg that never finishes (and leaves a child in its group).
	slow := filepath.Join(dir, "rg")
	require.NoError(t, os.WriteFile(slow, []byte("#!/bin/sh\nsleep 30 &\nsleep 30\n"), 0o755))
	start := time.Now()
	out := call(t, Options{RG: slow}, dir, "grep", `{"pattern":"x","timeoutMs":200}`)
	require.Less(t, time.Since(start), 5*time.Second)
	require.True(t, out.IsError)
	require.Equal(t, "Error: grep timed out after 200ms and was stopped; narrow the path or pattern, or raise timeoutMs", text(out))

	out = call(t, Options{RG: slow, Timeout: 100 * time.Millisecond}, dir, "glob", `{"pattern":"x"}`)
	require.Equal(t, "Error: glob timed out after 100ms and was stopped; narrow the path, or raise timeoutMs", text(out))

	out = call(t, Options{RG: slow}, dir, "grep", `{"pattern":"x","timeoutMs":-1}`)
	require.Equal(t, "Error: invalid timeoutMs: expected a positive number, got -1", text(out))
}

func TestCancelKillsTheSearch(t *testing.T) {
	dir := t.TempDir()
	slow := filepath.Join(dir, "rg")
	require.NoError(t, os.WriteFile(slow, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r := capabilities.NewRegistry(New(Options{RG: slow})...)
	start := time.Now()
	out := r.Execute(ctx, env{dir}, "c1", "grep", `{"pattern":"x"}`)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Contains(t, text(out), "Error: search aborted")
}

// confined returns sandboxing over the host's default backend chain, or
// skips when the host has none.
func confined(t *testing.T, mode string) *Sandboxing {
	t.Helper()
	p, err := sandbox.NewDefaultProvider()
	require.NoError(t, err)
	if _, err := p.Confine(context.Background(), []string{"true"}, sandbox.Policy{Mode: sandbox.ReadOnly, WorkspaceRoot: t.TempDir()}); err != nil {
		t.Skipf("SANDBOX NOT TESTED: no usable backend: %v", err)
	}
	return &Sandboxing{Confiner: p,
		Mode: func(*capabilities.Call) string { return mode },
		Root: func(c *capabilities.Call) string { return c.Session.Cwd() }}
}

func TestConfinedSearchRunsThroughTheSandbox(t *testing.T) {
	needRG(t)
	dir := tree(t, map[string]string{"a.go": "// TODO a\n"})
	sb := confined(t, "read-only")
	out := call(t, Options{Sandbox: sb}, dir, "grep", `{"pattern":"TODO"}`)
	require.False(t, out.IsError, text(out))
	require.Equal(t, "a.go:1: // TODO a\n[1 match in 1 file]", text(out))
	out = call(t, Options{Sandbox: sb}, dir, "glob", `{"pattern":"*.go"}`)
	require.Equal(t, "a.go", text(out))
}

func TestConfinerFailureFailsClosed(t *testing.T) {
	needRG(t)
	dir := tree(t, map[string]string{"a.go": "x\n"})
	sb := &Sandboxing{Confiner: sandbox.NewProvider(), Mode: func(*capabilities.Call) string { return "read-only" },
		Root: func(*capabilities.Call) string { return dir }}
	out := call(t, Options{Sandbox: sb}, dir, "grep", `{"pattern":"x"}`)
	require.True(t, out.IsError)
	require.Contains(t, text(out), "sandbox")
}

func TestCardsAreSearchKindWithLocation(t *testing.T) {
	tools := New(Options{})
	v := tools[1].(capabilities.CallPresenter).PresentCall(json.RawMessage(`{"pattern":"TODO","path":"/w/src","glob":"*.go"}`))
	require.EqualValues(t, "search", v.ToolKind)
	require.Equal(t, `Grep "TODO" in /w/src (*.go)`, v.Title)
	require.Equal(t, []capabilities.Location{{Path: "/w/src"}}, v.Locations)
	v = tools[0].(capabilities.CallPresenter).PresentCall(json.RawMessage(`{"pattern":"**/*.go"}`))
	require.Equal(t, `Glob "**/*.go"`, v.Title)
	require.EqualValues(t, "search", v.ToolKind)
	require.Empty(t, v.Locations)
}
