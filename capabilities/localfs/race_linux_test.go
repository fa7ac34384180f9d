package localfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// TestSwapRace runs writers against the seam while a goroutine exchanges a
// directory inside the root with a symbolic link to a directory outside
// (renameat2 RENAME_EXCHANGE) in a tight loop. A write either lands inside
// or is refused; outside, nothing changes and no staging file appears.
func TestSwapRace(t *testing.T) {
	strategies(t, func(t *testing.T, walkOnly bool) {
		for _, absolute := range []bool{true, false} {
			t.Run("absolute="+strconv.FormatBool(absolute), func(t *testing.T) {
				tr := newTree(t)
				work, evil := filepath.Join(tr.root, "work"), filepath.Join(tr.root, "evil")
				require.NoError(t, os.Mkdir(work, 0o755))
				to := tr.away
				if !absolute {
					to = "../away"
				}
				require.NoError(t, os.Symlink(to, evil))
				outside := tr.awayState(t)
				f := newFS(t, tr.root, walkOnly)
				ctx := context.Background()

				stop := make(chan struct{})
				var swaps atomic.Int64
				var swapper sync.WaitGroup
				swapper.Add(1)
				go func() {
					defer swapper.Done()
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
				var wrote, refused atomic.Int64
				var writers sync.WaitGroup
				for w := range 4 {
					writers.Add(1)
					go func() {
						defer writers.Done()
						// 250 writes each, more while none has landed inside
						// (on a busy machine the swapper can hold the link
						// in place for all of them), bounded.
						for i := 0; i < 250 || (wrote.Load() == 0 && i < 5000); i++ {
							var p string
							switch i % 3 {
							case 0:
								p = filepath.Join(work, "secret.txt") // the name of the file outside
							case 1:
								p = filepath.Join(work, "d"+strconv.Itoa(w)+"-"+strconv.Itoa(i), "x.txt")
							default:
								p = filepath.Join(work, "f"+strconv.Itoa(w)+".txt")
							}
							switch err := f.WriteFile(ctx, p, []byte("pwned\n")); {
							case err == nil:
								wrote.Add(1)
							case errors.Is(err, capabilities.ErrOutsideRoot):
								refused.Add(1)
							default:
								// A swap between two steps may also surface as a
								// vanished or replaced directory; never outside.
								require.True(t, errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EEXIST), "unexpected error: %v", err)
							}
						}
					}()
				}
				writers.Wait()
				close(stop)
				swapper.Wait()
				t.Logf("%d swaps, %d writes inside, %d refused", swaps.Load(), wrote.Load(), refused.Load())
				require.Positive(t, swaps.Load())
				require.Positive(t, wrote.Load())
				require.Equal(t, outside, tr.awayState(t), "nothing outside the root changed")
				require.NoError(t, filepath.Walk(tr.base, func(p string, _ os.FileInfo, err error) error {
					require.NoError(t, err)
					require.False(t, strings.HasPrefix(filepath.Base(p), stagePrefix), "staging residue at %s", p)
					return nil
				}))
			})
		}
	})
}
