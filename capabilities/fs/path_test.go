package fs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func outside(p, root string) string {
	return `refusing to access "` + p + `": it resolves outside the session root ` + root
}

func TestConfineRefusesEscapes(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	root := filepath.Join(base, "root")
	away := filepath.Join(base, "away")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.MkdirAll(away, 0o755))
	secret := filepath.Join(away, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret\n"), 0o644))
	require.NoError(t, os.Symlink(secret, filepath.Join(root, "file-link")))
	require.NoError(t, os.Symlink(away, filepath.Join(root, "dir-link")))
	require.NoError(t, os.Symlink("../away/new.txt", filepath.Join(root, "dangling-link")))
	require.NoError(t, os.Symlink("../away/secret.txt", filepath.Join(root, "file-rel")))
	require.NoError(t, os.Symlink("../away", filepath.Join(root, "dir-rel")))
	require.NoError(t, os.Symlink("/proc/self/root"+away, filepath.Join(root, "proc-link")))
	require.NoError(t, os.Symlink("loop-b", filepath.Join(root, "loop-a")))
	require.NoError(t, os.Symlink("loop-a", filepath.Join(root, "loop-b")))

	h := newHarnessIn(t, root, true)
	for _, tc := range []struct{ arg, display string }{
		{"../away/secret.txt", secret},
		{"sub/../../away/secret.txt", secret},
		{secret, secret},
		{"/", "/"},
		{"file-link", filepath.Join(root, "file-link")},
		{"dir-link/secret.txt", filepath.Join(root, "dir-link/secret.txt")},
		{"dir-link/new/deeper.txt", filepath.Join(root, "dir-link/new/deeper.txt")},
		{"file-rel", filepath.Join(root, "file-rel")},
		{"dir-rel/secret.txt", filepath.Join(root, "dir-rel/secret.txt")},
		{"dir-rel/new/deeper.txt", filepath.Join(root, "dir-rel/new/deeper.txt")},
		{"/proc/self/root" + secret, "/proc/self/root" + secret},
		{"proc-link/secret.txt", filepath.Join(root, "proc-link/secret.txt")},
	} {
		msg := outside(tc.display, root)
		h.fails("read", map[string]any{"file_path": tc.arg}, msg, CodeOutsideRoot)
		h.fails("write", map[string]any{"file_path": tc.arg, "content": "pwned"}, msg, CodeOutsideRoot)
		h.fails("edit", map[string]any{"file_path": tc.arg, "old_string": "s3cret", "new_string": "pwned"}, msg, CodeOutsideRoot)
	}
	got, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "s3cret\n", string(got))
	require.NoFileExists(t, filepath.Join(away, "new", "deeper.txt"))
	entries, err := os.ReadDir(away)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was created outside")

	// A link loop is an I/O error, not an escape.
	loop := filepath.Join(root, "loop-a")
	h.fails("read", map[string]any{"file_path": "loop-a"}, `cannot read "`+loop+`": too many levels of symbolic links`, "")
	h.fails("write", map[string]any{"file_path": "loop-a/x", "content": "x"}, `cannot write "`+loop+`/x": too many levels of symbolic links`, "")

	// A dangling link that points outside is refused without looking
	// there; its target is never created.
	h.fails("write", map[string]any{"file_path": "dangling-link", "content": "pwned\n"}, outside(filepath.Join(root, "dangling-link"), root), CodeOutsideRoot)
	require.NoFileExists(t, filepath.Join(away, "new.txt"))
	// A dangling link that stays inside is the link itself: writing
	// replaces the link.
	require.NoError(t, os.Symlink("missing/new.txt", filepath.Join(root, "dangling-inside")))
	h.ok("write", map[string]any{"file_path": "dangling-inside", "content": "inside\n"})
	require.NoDirExists(t, filepath.Join(root, "missing"))
	fi, err := os.Lstat(filepath.Join(root, "dangling-inside"))
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular())

	// Without Confine the same paths are reachable (upstream behaviour).
	free := newHarnessIn(t, root, false)
	require.Equal(t, readText(secret, "1: s3cret", "(End of file - total 1 lines)"), free.ok("read", map[string]any{"file_path": "../away/secret.txt"}))
	require.Equal(t, readText(filepath.Join(root, "file-link"), "1: s3cret", "(End of file - total 1 lines)"), free.ok("read", map[string]any{"file_path": "file-link"}))
}

func TestConfineAllowsInsideLinks(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	real := filepath.Join(base, "real-root")
	require.NoError(t, os.MkdirAll(filepath.Join(real, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(real, "sub", "target.txt"), []byte("t\n"), 0o644))
	require.NoError(t, os.Symlink("sub/target.txt", filepath.Join(real, "alias.txt")))
	require.NoError(t, os.Symlink("sub", filepath.Join(real, "subdir")))
	require.NoError(t, os.Symlink(filepath.Join(real, "sub", "target.txt"), filepath.Join(real, "abs-alias.txt")))
	// The session root itself is reached through a symbolic link.
	linkedRoot := filepath.Join(base, "linked-root")
	require.NoError(t, os.Symlink(real, linkedRoot))

	h := newHarnessIn(t, linkedRoot, true)
	alias := filepath.Join(linkedRoot, "alias.txt")
	require.Equal(t, readText(alias, "1: t", "(End of file - total 1 lines)"), h.ok("read", map[string]any{"file_path": "alias.txt"}))
	h.ok("edit", map[string]any{"file_path": "alias.txt", "old_string": "t", "new_string": "u"})
	got, err := os.ReadFile(filepath.Join(real, "sub", "target.txt"))
	require.NoError(t, err)
	require.Equal(t, "u\n", string(got))
	h.ok("write", map[string]any{"file_path": "subdir/new/file.txt", "content": "n"})
	require.FileExists(t, filepath.Join(real, "sub", "new", "file.txt"))
	h.ok("read", map[string]any{"file_path": filepath.Join(real, "sub", "target.txt")}) // absolute real path inside
	h.ok("read", map[string]any{"file_path": "./sub/../alias.txt"})
	// An absolute link whose target lies inside the root's real path.
	abs := filepath.Join(linkedRoot, "abs-alias.txt")
	require.Equal(t, readText(abs, "1: u", "(End of file - total 1 lines)"), h.ok("read", map[string]any{"file_path": "abs-alias.txt"}))
	h.ok("edit", map[string]any{"file_path": "abs-alias.txt", "old_string": "u", "new_string": "v"})
	got, err = os.ReadFile(filepath.Join(real, "sub", "target.txt"))
	require.NoError(t, err)
	require.Equal(t, "v\n", string(got))
}

func TestResolve(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)

	tg, err := resolve(dir, "a/b/../c.txt")
	require.NoError(t, err)
	require.Equal(t, target{display: filepath.Join(dir, "a/c.txt"), root: dir}, tg)

	tg, err = resolve(dir, "/nonexistent-root-dir/x/y")
	require.NoError(t, err)
	require.Equal(t, "/nonexistent-root-dir/x/y", tg.display)

	tg, err = resolve(dir+"/./sub/..", "x")
	require.NoError(t, err)
	require.Equal(t, target{display: filepath.Join(dir, "x"), root: dir}, tg)
}
