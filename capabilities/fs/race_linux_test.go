package fs

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// snapshotTree records every entry under dir (not following links): its
// mode and, for files, its content.
func snapshotTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
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

// changed lists the entries that differ between two snapshots.
func changed(before, after map[string]string) []string {
	var out []string
	for p, v := range after {
		if was, ok := before[p]; !ok {
			out = append(out, "created "+p+" ("+v+")")
		} else if was != v {
			out = append(out, "changed "+p+" ("+was+" → "+v+")")
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, "removed "+p)
		}
	}
	sort.Strings(out)
	return out
}

// TestSwapRaceNeverEscapes is the audit's attack through the real tools: a
// goroutine keeps exchanging a directory inside the root with a symbolic
// link to a directory outside (renameat2 RENAME_EXCHANGE) while the model
// writes and edits files in that directory. Nothing outside may change:
// no byte written, no file created or overwritten, no staging left.
func TestSwapRaceNeverEscapes(t *testing.T) {
	for _, absolute := range []bool{true, false} {
		t.Run("absolute="+strconv.FormatBool(absolute), func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			root, away := filepath.Join(base, "root"), filepath.Join(base, "away")
			work, evil := filepath.Join(root, "work"), filepath.Join(root, "evil")
			require.NoError(t, os.MkdirAll(work, 0o755))
			require.NoError(t, os.MkdirAll(away, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(away, "victim.txt"), []byte("victim\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(away, "e.txt"), []byte("edit me\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(work, "e.txt"), []byte("edit me\n"), 0o644))
			to := away
			if !absolute {
				to = "../away"
			}
			require.NoError(t, os.Symlink(to, evil))
			outside := snapshotTree(t, away)

			h := newHarnessIn(t, root, true)
			stop := make(chan struct{})
			var swaps atomic.Int64
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if unix.Renameat2(unix.AT_FDCWD, work, unix.AT_FDCWD, evil, unix.RENAME_EXCHANGE) == nil {
						swaps.Add(1)
					}
				}
			}()
			var wrote, refused int
			for i := 0; i < 1000; i++ {
				var outs []string
				switch i % 4 {
				case 0:
					outs = append(outs, text(h.call("write", map[string]any{"file_path": "work/victim.txt", "content": "pwned " + strconv.Itoa(i) + "\n"})))
				case 1:
					outs = append(outs, text(h.call("write", map[string]any{"file_path": "work/d" + strconv.Itoa(i) + "/x.txt", "content": "pwned\n"})))
				case 2:
					h.call("read", map[string]any{"file_path": "work/e.txt"})
					outs = append(outs, text(h.call("edit", map[string]any{"file_path": "work/e.txt", "old_string": "edit me", "new_string": "edit me " + strconv.Itoa(i)})))
				case 3:
					h.call("read", map[string]any{"file_path": "work/victim.txt"})
					outs = append(outs, text(h.call("write", map[string]any{"file_path": "work/victim.txt", "content": "pwned again\n"})))
				}
				for _, o := range outs {
					switch {
					case strings.HasPrefix(o, "<path>"), strings.HasPrefix(o, "The file "):
						wrote++
					case strings.Contains(o, "resolves outside the session root"):
						refused++
					}
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("%d swaps, %d writes and edits done, %d refused as outside", swaps.Load(), wrote, refused)
			require.Positive(t, swaps.Load())
			require.Positive(t, wrote)

			require.Empty(t, changed(outside, snapshotTree(t, away)), "nothing outside the root changed")
			for p := range snapshotTree(t, base) {
				require.NotContains(t, filepath.Base(p), ".dsh-stage-", "staging residue at %s", p)
			}
		})
	}
}
