package sandbox

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSeatbeltConfinesOnMacOS runs both forms of the profile under the
// real sandbox-exec: in workspace-write a write inside the workspace
// lands, one outside every root is denied and classified as a denial, and
// read-only denies the workspace too.
func TestSeatbeltConfinesOnMacOS(t *testing.T) {
	if runtime.GOOS != "darwin" {
		t.Skip("needs macOS's sandbox-exec and kernel; the profiles are checked on every system by TestSeatbeltContractForm and TestSeatbeltDefaultForm")
	}
	if _, err := os.Stat(SeatbeltPath); err != nil {
		t.Skipf("%s is missing on this Mac: %v", SeatbeltPath, err)
	}
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	outsideDir, err := os.MkdirTemp(home, ".dsh-seatbelt-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(outsideDir) })
	for _, contract := range []bool{true, false} {
		s := &Seatbelt{Contract: contract}
		ws := t.TempDir()
		run := func(mode Mode, target string) (int, string) {
			argv := s.Wrap(Policy{Mode: mode, WorkspaceRoot: ws}, []string{"/bin/bash", "-c", "echo x > \"$0\"", target})
			cmd := exec.Command(argv[0], argv[1:]...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode(), stderr.String()
			}
			require.NoError(t, err)
			return 0, stderr.String()
		}
		inside, outside := filepath.Join(ws, "in.txt"), filepath.Join(outsideDir, "out.txt")
		code, stderr := run(WorkspaceWrite, inside)
		require.Equal(t, 0, code, "contract=%v: %s", contract, stderr)
		assert.FileExists(t, inside)
		code, stderr = run(WorkspaceWrite, outside)
		assert.True(t, s.Classify(code, stderr).Denied, "contract=%v: exit %d, %s", contract, code, stderr)
		assert.NoFileExists(t, outside)
		code, stderr = run(ReadOnly, filepath.Join(ws, "ro.txt"))
		assert.True(t, s.Classify(code, stderr).Denied, "contract=%v: exit %d, %s", contract, code, stderr)
	}
}
