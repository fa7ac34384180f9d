package search

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/fs"
	"github.com/dsh-acp/dsh-acp/session"
)

// rootsEnv is a session with extra workspace roots and a real log.
type rootsEnv struct {
	cwd   string
	roots []string
	log   *session.Log
}

func newRootsEnv(cwd string, roots ...string) *rootsEnv {
	return &rootsEnv{cwd: cwd, roots: roots,
		log: session.NewLog(session.Header{ID: "s1", Cwd: cwd}, func() int64 { return 0 }, nil)}
}

func (e *rootsEnv) Cwd() string              { return e.cwd }
func (e *rootsEnv) Log() *session.Log        { return e.log }
func (e *rootsEnv) Host() *capabilities.Host { return &capabilities.Host{Roots: e.roots} }

func (e *rootsEnv) call(t testing.TB, o Options, name, args string) string {
	t.Helper()
	r := capabilities.NewRegistry(New(o)...)
	return text(r.Execute(context.Background(), e, "c1", name, args))
}

// user answers every approval request with one outcome and counts them.
type user struct {
	mu   sync.Mutex
	out  approval.Outcome
	seen []approval.Request
}

func (u *user) Answer(_ context.Context, _ string, req approval.Request) (approval.Outcome, bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.seen = append(u.seen, req)
	return u.out, true, nil
}

// layout is a cwd, an extra root beside it with a link to a third
// directory outside both, all holding a match.
type layout struct{ cwd, extra, outside string }

func newWorkspace(t *testing.T) layout {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	w := layout{cwd: filepath.Join(base, "proj"), extra: filepath.Join(base, "lib"), outside: filepath.Join(base, "secret")}
	for p, c := range map[string]string{
		"proj/main.go":      "package main // TODO main\n",
		"proj/.gitignore":   "gen/\n",
		"proj/gen/x.go":     "// TODO generated\n",
		"lib/src/lib.go":    "package lib // TODO lib\n",
		"lib/.gitignore":    "vendor/\n",
		"lib/vendor/v.go":   "// TODO vendored\n",
		"secret/key.go":     "// TODO secret\n",
		"secret/src/in.go":  "// TODO secret src\n",
		"proj/sub/inner.go": "// TODO inner\n",
	} {
		full := filepath.Join(base, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
	require.NoError(t, os.Symlink(w.outside, filepath.Join(w.extra, "link")))
	return w
}

func TestSearchWithoutPathCoversEveryRootAndNoLinkOut(t *testing.T) {
	needRG(t)
	w := newWorkspace(t)
	e := newRootsEnv(w.cwd, w.extra)
	gate := &fs.ModeGate{Mode: func(*capabilities.Call) string { return "workspace-write" }}
	o := Options{Gate: gate}

	// The cwd's matches first and relative, as always; then the extra
	// root's, absolute, with its own .gitignore; the link to the outside
	// directory is not followed.
	got := e.call(t, o, "grep", `{"pattern":"TODO"}`)
	require.Equal(t, "main.go:1: package main // TODO main\nsub/inner.go:1: // TODO inner\n"+
		w.extra+"/src/lib.go:1: package lib // TODO lib\n[3 matches in 3 files]", got)

	got = e.call(t, o, "glob", `{"pattern":"*.go"}`)
	require.Equal(t, "main.go\nsub/inner.go\n"+w.extra+"/src/lib.go", got)

	// A glob with a slash is anchored at each root.
	got = e.call(t, o, "glob", `{"pattern":"src/*.go"}`)
	require.Equal(t, w.extra+"/src/lib.go", got)

	// Without extra roots: the cwd alone, exactly as before.
	got = newRootsEnv(w.cwd).call(t, o, "glob", `{"pattern":"*.go"}`)
	require.Equal(t, "main.go\nsub/inner.go", got)
}

func TestSearchAPathInAnExtraRoot(t *testing.T) {
	needRG(t)
	w := newWorkspace(t)
	e := newRootsEnv(w.cwd, w.extra)
	o := Options{Gate: &fs.ModeGate{Mode: func(*capabilities.Call) string { return "workspace-write" }}}

	got := e.call(t, o, "grep", `{"pattern":"TODO","path":"`+w.extra+`"}`)
	require.Equal(t, w.extra+"/src/lib.go:1: package lib // TODO lib\n[1 match in 1 file]", got)
	// Relative to the cwd, through "..", still in the extra root.
	got = e.call(t, o, "grep", `{"pattern":"TODO","path":"../lib/src"}`)
	require.Equal(t, w.extra+"/src/lib.go:1: package lib // TODO lib\n[1 match in 1 file]", got)
	// Its globs anchor at the extra root, as the cwd's do at the cwd.
	got = e.call(t, o, "glob", `{"pattern":"src/*.go","path":"`+w.extra+`"}`)
	require.Equal(t, w.extra+"/src/lib.go", got)
	// A path in the cwd is searched as before (relative output).
	got = e.call(t, o, "grep", `{"pattern":"TODO","path":"sub"}`)
	require.Equal(t, "sub/inner.go:1: // TODO inner\n[1 match in 1 file]", got)
}

func TestSearchOutsideEveryRootIsRefusedOrAsked(t *testing.T) {
	needRG(t)
	w := newWorkspace(t)
	e := newRootsEnv(w.cwd, w.extra)
	refusing := Options{Gate: &fs.ModeGate{Mode: func(*capabilities.Call) string { return "workspace-write" }}}

	// Outside every root, and through a link of the extra root: the read
	// tool's refusal, and rg never ran (no secret in the answer).
	for _, p := range []string{w.outside, "../secret/src", w.extra + "/link", w.extra + "/link/src"} {
		for _, tool := range []string{"grep", "glob"} {
			got := e.call(t, refusing, tool, `{"pattern":"*","path":"`+p+`"}`)
			display := p
			if !filepath.IsAbs(p) {
				display = filepath.Join(w.cwd, p)
			}
			root := w.cwd
			if strings.HasPrefix(display, w.extra+"/") {
				root = w.extra
			}
			require.Equal(t, `Error: refusing to access "`+display+`": it resolves outside the session root `+root, got, tool+" "+p)
		}
	}

	// With an approval service the user is asked; allowed once, the path
	// is searched; refused, nothing is.
	u := &user{out: approval.AllowedOnce}
	n := 0
	svc := approval.NewService(approval.PolicyAsk, func() string { n++; return "ap" }, u)
	e.log.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	asking := Options{Gate: &fs.ModeGate{Mode: func(*capabilities.Call) string { return "workspace-write" }, Approver: svc}}
	got := e.call(t, asking, "grep", `{"pattern":"TODO","path":"`+w.outside+`"}`)
	require.Contains(t, got, w.outside+"/key.go:1: // TODO secret")
	require.Len(t, u.seen, 1)
	require.Equal(t, `read "`+w.outside+`": it is outside the session root `+w.cwd, u.seen[0].Reason)

	u.out = approval.Rejected
	got = e.call(t, asking, "grep", `{"pattern":"TODO","path":"`+w.outside+`"}`)
	require.True(t, strings.HasPrefix(got, "Error: cannot read"), got)
	require.NotContains(t, got, "key.go")
	require.Len(t, u.seen, 2)

	// danger-full-access searches anywhere, without asking.
	free := Options{Gate: &fs.ModeGate{Mode: func(*capabilities.Call) string { return "danger-full-access" }, Approver: svc}}
	got = e.call(t, free, "glob", `{"pattern":"*.go","path":"`+w.outside+`"}`)
	require.Equal(t, w.outside+"/key.go\n"+w.outside+"/src/in.go", got)
	require.Len(t, u.seen, 2)
}

func TestConfinedSearchReachesExtraRootsUnderWorkspaceWrite(t *testing.T) {
	needRG(t)
	w := newWorkspace(t) // beneath /tmp, which bwrap's workspace-write replaces by an empty tmpfs
	sb := confined(t, "workspace-write")
	e := newRootsEnv(w.cwd, w.extra)
	o := Options{Sandbox: sb, Gate: &fs.ModeGate{Mode: func(*capabilities.Call) string { return "workspace-write" }}}
	got := e.call(t, o, "grep", `{"pattern":"TODO"}`)
	require.Equal(t, "main.go:1: package main // TODO main\nsub/inner.go:1: // TODO inner\n"+
		w.extra+"/src/lib.go:1: package lib // TODO lib\n[3 matches in 3 files]", got)
	got = e.call(t, o, "glob", `{"pattern":"*.go","path":"`+w.extra+`"}`)
	require.Equal(t, w.extra+"/src/lib.go", got)
}

func TestWorkspaceScopesSkipNestedRoots(t *testing.T) {
	base := t.TempDir()
	cwd := filepath.Join(base, "w")
	got := workspace(cwd, cwd, []string{filepath.Join(cwd, "sub"), filepath.Join(base, "x"), filepath.Join(base, "x", "y"), filepath.Join(base, "x")})
	require.Equal(t, []scope{{dir: cwd}, {dir: filepath.Join(base, "x"), arg: filepath.Join(base, "x")}}, got)
	// A root holding the cwd replaces it.
	got = workspace(cwd, cwd, []string{base})
	require.Equal(t, []scope{{dir: base, arg: base}}, got)
}

// A path through a link and back out ("lnk/..", lnk a link the repository
// ships to a directory outside) names, for the kernel, the parent of the
// link's target: it is judged as that directory (refused, or asked with
// that path) and never searched as the cwd the cleaned path looks like.
func TestSearchThroughLinkDotDotIsJudgedAsTheKernelResolvesIt(t *testing.T) {
	needRG(t)
	w := newWorkspace(t)
	require.NoError(t, os.Symlink(filepath.Join(w.outside, "src"), filepath.Join(w.cwd, "lnk")))
	e := newRootsEnv(w.cwd)
	refusing := Options{Gate: &fs.ModeGate{Mode: func(*capabilities.Call) string { return "workspace-write" }}}
	for _, p := range []string{"lnk/..", w.cwd + "/lnk/..", "lnk/../src", "./lnk/../."} {
		for tool, pattern := range map[string]string{"grep": "TODO", "glob": "*"} {
			got := e.call(t, refusing, tool, `{"pattern":"`+pattern+`","path":"`+p+`"}`)
			require.NotContains(t, got, "key.go", tool+" "+p)
			require.NotContains(t, got, "in.go", tool+" "+p)
			require.Contains(t, got, `Error: refusing to access "`+w.outside, tool+" "+p)
		}
	}
	// Asked, the user sees the directory that would be read.
	u := &user{out: approval.Rejected}
	svc := approval.NewService(approval.PolicyAsk, func() string { return "ap" }, u)
	e.log.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	asking := Options{Gate: &fs.ModeGate{Mode: func(*capabilities.Call) string { return "workspace-write" }, Approver: svc}}
	got := e.call(t, asking, "grep", `{"pattern":"TODO","path":"lnk/.."}`)
	require.NotContains(t, got, "TODO secret")
	require.Len(t, u.seen, 1)
	require.Equal(t, `read "`+w.outside+`": it is outside the session root `+w.cwd, u.seen[0].Reason)

	// A link that stays inside still works through "..".
	require.NoError(t, os.Symlink(filepath.Join(w.cwd, "sub"), filepath.Join(w.cwd, "in")))
	got = e.call(t, refusing, "grep", `{"pattern":"TODO","path":"in/../sub"}`)
	require.Contains(t, got, "inner.go:1: // TODO inner")
}
