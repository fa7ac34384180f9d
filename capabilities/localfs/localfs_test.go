//go:build unix

package localfs

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// strategies runs a test once per resolution strategy: openat2 first
// (falling back to the walk where it must), and the walk alone (what a
// kernel without openat2 gets).
func strategies(t *testing.T, run func(t *testing.T, walkOnly bool)) {
	t.Run("openat2", func(t *testing.T) { run(t, false) })
	t.Run("walk", func(t *testing.T) { run(t, true) })
}

func newFS(t *testing.T, root string, walkOnly bool) *FS {
	t.Helper()
	f, err := New(root)
	require.NoError(t, err)
	f.walkOnly = walkOnly
	return f
}

// tree is a session root beside a directory outside it.
type tree struct {
	base, root, away, secret string
}

func newTree(t *testing.T) tree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	tr := tree{base: base, root: filepath.Join(base, "root"), away: filepath.Join(base, "away")}
	tr.secret = filepath.Join(tr.away, "secret.txt")
	require.NoError(t, os.MkdirAll(filepath.Join(tr.root, "sub", "deeper"), 0o755))
	require.NoError(t, os.MkdirAll(tr.away, 0o755))
	require.NoError(t, os.WriteFile(tr.secret, []byte("s3cret\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tr.root, "sub", "target.txt"), []byte("t\n"), 0o644))
	for link, to := range map[string]string{
		"file-abs":         tr.secret,
		"file-rel":         "../away/secret.txt",
		"dir-abs":          tr.away,
		"dir-rel":          "../away",
		"sub/deep-rel":     "../../away",
		"dangling-out":     "../away/new.txt",
		"dangling-abs-out": filepath.Join(tr.away, "new.txt"),
		"proc-root":        "/proc/self/root" + tr.away,
		"root-up":          "sub/../../away",
		"chain":            "sub/deeper/../../dir-rel",
		"loop-a":           "loop-b",
		"loop-b":           "loop-a",
		"self":             "self",
		// Inside, and staying inside.
		"alias-rel":      "sub/target.txt",
		"alias-abs":      filepath.Join(tr.root, "sub", "target.txt"),
		"subdir-rel":     "sub",
		"subdir-abs":     filepath.Join(tr.root, "sub"),
		"sub/up":         "../sub/target.txt",
		"sub/deeper/top": "../../alias-abs",
		"dangling-in":    "sub/missing/new.txt",
	} {
		require.NoError(t, os.Symlink(to, filepath.Join(tr.root, link)))
	}
	return tr
}

// awayState is everything outside the root: names, modes and contents.
func (tr tree) awayState(t *testing.T) map[string]string {
	t.Helper()
	state := map[string]string{}
	require.NoError(t, filepath.Walk(tr.base, func(p string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
		if p == tr.root || strings.HasPrefix(p, tr.root+"/") {
			return nil
		}
		v := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			v += " " + string(b)
		}
		state[p] = v
		return nil
	}))
	return state
}

func TestRefusesEverythingOutside(t *testing.T) {
	strategies(t, func(t *testing.T, walkOnly bool) {
		tr := newTree(t)
		before := tr.awayState(t)
		f := newFS(t, tr.root, walkOnly)
		ctx := context.Background()
		for _, p := range []string{
			tr.root + "/../away/secret.txt",
			tr.secret,
			"/",
			tr.base,
			"/proc/self/root" + tr.secret,
			"/proc/self/cwd/x",
			tr.root + "x/sibling.txt", // a sibling sharing the root's prefix
			filepath.Join(tr.root, "file-abs"),
			filepath.Join(tr.root, "file-rel"),
			filepath.Join(tr.root, "dir-abs", "secret.txt"),
			filepath.Join(tr.root, "dir-rel", "secret.txt"),
			filepath.Join(tr.root, "dir-rel", "new", "deeper.txt"),
			filepath.Join(tr.root, "sub", "deep-rel", "secret.txt"),
			filepath.Join(tr.root, "dangling-out"),
			filepath.Join(tr.root, "dangling-abs-out"),
			filepath.Join(tr.root, "proc-root", "secret.txt"),
			filepath.Join(tr.root, "root-up", "secret.txt"),
			filepath.Join(tr.root, "chain", "secret.txt"),
			filepath.Join(tr.root, "subdir-rel", "deep-rel", "new.txt"),
		} {
			_, err := f.Stat(ctx, p)
			assert.ErrorIs(t, err, capabilities.ErrOutsideRoot, "stat %s", p)
			_, _, err = f.Open(ctx, p)
			assert.ErrorIs(t, err, capabilities.ErrOutsideRoot, "open %s", p)
			err = f.WriteFile(ctx, p, []byte("pwned\n"))
			assert.ErrorIs(t, err, capabilities.ErrOutsideRoot, "write %s", p)
			var pe *os.PathError
			if assert.ErrorAs(t, err, &pe) {
				assert.Equal(t, p, pe.Path, "errors name the display path")
			}
			if !strings.HasPrefix(p, tr.root+"/") || strings.Contains(p, "..") {
				err = f.Remove(ctx, p)
				assert.ErrorIs(t, err, capabilities.ErrOutsideRoot, "remove %s", p)
			}
		}
		require.Equal(t, before, tr.awayState(t), "nothing outside the root changed")

		for _, p := range []string{"loop-a", "self", "loop-a/x"} {
			err := f.WriteFile(ctx, filepath.Join(tr.root, p), []byte("x"))
			require.ErrorIs(t, err, syscall.ELOOP, p)
		}
		_, err := f.Stat(ctx, filepath.Join(tr.root, "sub", "target.txt", "x"))
		require.ErrorIs(t, err, syscall.ENOTDIR)
		require.NoFileExists(t, filepath.Join(tr.away, "new.txt"))
		require.NoDirExists(t, filepath.Join(tr.away, "new"))
	})
}

func TestLinksInsideWork(t *testing.T) {
	strategies(t, func(t *testing.T, walkOnly bool) {
		tr := newTree(t)
		target := filepath.Join(tr.root, "sub", "target.txt")
		// The root itself is reached through a symbolic link too.
		linked := filepath.Join(tr.base, "linked-root")
		require.NoError(t, os.Symlink("root", linked))
		f := newFS(t, linked, walkOnly)
		ctx := context.Background()
		want, err := f.Stat(ctx, filepath.Join(linked, "sub", "target.txt"))
		require.NoError(t, err)
		require.True(t, want.Exists && want.Regular)
		for _, p := range []string{"alias-rel", "alias-abs", "subdir-rel/target.txt", "subdir-abs/target.txt", "sub/up", "sub/deeper/top", "subdir-abs/deeper/../target.txt"} {
			for _, display := range []string{filepath.Join(linked, p), filepath.Join(tr.root, p)} {
				info, err := f.Stat(ctx, display)
				require.NoError(t, err, display)
				require.Equal(t, want.ID, info.ID, "%s is the same file", display)
				r, _, err := f.Open(ctx, display)
				require.NoError(t, err, display)
				b, err := io.ReadAll(r)
				require.NoError(t, err)
				require.NoError(t, r.Close())
				require.Equal(t, "t\n", string(b))
			}
		}
		// Writing through a link writes its target and keeps the link.
		require.NoError(t, f.WriteFile(ctx, filepath.Join(linked, "alias-abs"), []byte("u\n")))
		got, err := os.ReadFile(target)
		require.NoError(t, err)
		require.Equal(t, "u\n", string(got))
		fi, err := os.Lstat(filepath.Join(tr.root, "alias-abs"))
		require.NoError(t, err)
		require.Equal(t, os.ModeSymlink, fi.Mode().Type())
		// Parents are created through inside links.
		require.NoError(t, f.WriteFile(ctx, filepath.Join(linked, "subdir-abs", "new", "file.txt"), []byte("n")))
		require.FileExists(t, filepath.Join(tr.root, "sub", "new", "file.txt"))
		// A dangling link pointing inside is the link itself: writing
		// replaces it, its target's directory is not created.
		info, err := f.Stat(ctx, filepath.Join(linked, "dangling-in"))
		require.NoError(t, err)
		require.False(t, info.Exists)
		require.NoError(t, f.WriteFile(ctx, filepath.Join(linked, "dangling-in"), []byte("d")))
		fi, err = os.Lstat(filepath.Join(tr.root, "dangling-in"))
		require.NoError(t, err)
		require.True(t, fi.Mode().IsRegular())
		require.NoDirExists(t, filepath.Join(tr.root, "sub", "missing"))
		after, err := f.Stat(ctx, filepath.Join(linked, "dangling-in"))
		require.NoError(t, err)
		require.Equal(t, info.ID, after.ID, "a missing file has the ID it gets")
		// Remove deletes a link, not its target.
		require.NoError(t, f.Remove(ctx, filepath.Join(linked, "alias-rel")))
		require.NoFileExists(t, filepath.Join(tr.root, "alias-rel"))
		require.FileExists(t, target)
		_, err = f.Stat(ctx, linked)
		require.NoError(t, err, "the root itself")
	})
}

func TestWriteFile(t *testing.T) {
	strategies(t, func(t *testing.T, walkOnly bool) {
		root, err := filepath.EvalSymlinks(t.TempDir())
		require.NoError(t, err)
		f := newFS(t, root, walkOnly)
		ctx := context.Background()
		p := filepath.Join(root, "a", "b", "new.txt")

		info, err := f.Stat(ctx, p)
		require.NoError(t, err)
		require.Equal(t, capabilities.FileInfo{ID: info.ID}, info, "missing, with an ID")
		require.NoError(t, f.WriteFile(ctx, p, []byte("hello")))
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o644), fi.Mode())
		created, err := f.Stat(ctx, p)
		require.NoError(t, err)
		require.True(t, created.Exists && created.Regular)
		require.Equal(t, int64(5), created.Size)

		// An overwrite keeps the mode bits, including setgid.
		require.NoError(t, os.Chmod(p, 0o751|os.ModeSetgid))
		require.NoError(t, f.WriteFile(ctx, p, []byte("hello, world")))
		fi, err = os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o751)|os.ModeSetgid, fi.Mode())
		now, err := f.Stat(ctx, p)
		require.NoError(t, err)
		require.NotEqual(t, created.Version, now.Version)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, "hello, world", string(b))
		entries, err := os.ReadDir(filepath.Dir(p))
		require.NoError(t, err)
		require.Len(t, entries, 1, "no staging residue")

		// Cancelled: nothing becomes visible, nothing is left behind.
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		require.ErrorIs(t, f.WriteFile(cancelled, p, []byte("late")), context.Canceled)
		b, err = os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, "hello, world", string(b))

		// Directories and FIFOs are not opened as files (a FIFO without a
		// writer would block a plain open).
		require.NoError(t, unix.Mkfifo(filepath.Join(root, "fifo"), 0o644))
		for _, name := range []string{"a", "fifo"} {
			_, _, err := f.Open(ctx, filepath.Join(root, name))
			require.ErrorIs(t, err, capabilities.ErrNotRegular, name)
			info, err := f.Stat(ctx, filepath.Join(root, name))
			require.NoError(t, err)
			require.True(t, info.Exists)
			require.False(t, info.Regular)
		}
		require.Error(t, f.WriteFile(ctx, filepath.Join(root, "a"), []byte("x")), "a directory is not replaced")
		require.DirExists(t, filepath.Join(root, "a", "b"))
		_, _, err = f.Open(ctx, filepath.Join(root, "nope"))
		require.ErrorIs(t, err, os.ErrNotExist)
		require.ErrorIs(t, f.Remove(ctx, filepath.Join(root, "nope")), os.ErrNotExist)
		require.NoError(t, f.Remove(ctx, p))
		require.NoFileExists(t, p)
	})
}

func TestUnconfinedReachesAnything(t *testing.T) {
	strategies(t, func(t *testing.T, walkOnly bool) {
		tr := newTree(t)
		f := Unconfined()
		f.walkOnly = walkOnly
		ctx := context.Background()
		for _, p := range []string{tr.secret, filepath.Join(tr.root, "file-rel"), filepath.Join(tr.root, "dir-abs", "secret.txt"), filepath.Join(tr.root, "proc-root", "secret.txt")} {
			b, _, err := capabilities.ReadFile(ctx, f, p)
			require.NoError(t, err, p)
			require.Equal(t, "s3cret\n", string(b))
		}
		require.NoError(t, f.WriteFile(ctx, filepath.Join(tr.root, "dir-rel", "new", "x.txt"), []byte("x")))
		require.FileExists(t, filepath.Join(tr.away, "new", "x.txt"))
		// A dangling link is still the link itself.
		require.NoError(t, f.WriteFile(ctx, filepath.Join(tr.root, "dangling-out"), []byte("in")))
		require.NoFileExists(t, filepath.Join(tr.away, "new.txt"))
		_, err := f.Stat(ctx, "relative/path")
		require.ErrorIs(t, err, os.ErrInvalid)
	})
}

func TestNewRefusesBadRoots(t *testing.T) {
	_, err := New("relative")
	require.Error(t, err)
	_, err = New(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// BenchmarkWriteFile1MB is the seam alone: resolve beneath the root,
// stage, fsync, rename, fsync the directory.
func BenchmarkWriteFile1MB(b *testing.B) {
	for _, walkOnly := range []bool{false, true} {
		name := "openat2"
		if walkOnly {
			name = "walk"
		}
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			f, err := New(root)
			if err != nil {
				b.Fatal(err)
			}
			f.walkOnly = walkOnly
			data := []byte(strings.Repeat("x", 1<<20))
			p := filepath.Join(root, "a", "b", "c", "big.txt")
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := f.WriteFile(context.Background(), p, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStat is one resolution beneath the root three directories deep.
func BenchmarkStat(b *testing.B) {
	for _, walkOnly := range []bool{false, true} {
		name := "openat2"
		if walkOnly {
			name = "walk"
		}
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			p := filepath.Join(root, "a", "b", "c", "f.txt")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
			f, err := New(root)
			if err != nil {
				b.Fatal(err)
			}
			f.walkOnly = walkOnly
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Stat(context.Background(), p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
