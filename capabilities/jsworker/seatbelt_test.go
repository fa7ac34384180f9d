package jsworker_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities/jsproto"
	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/internal/netsink"
	"github.com/dsh-acp/dsh-acp/internal/workertest"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// TestWorkerUnderSeatbeltOnMacOS runs the real worker the way the pool
// starts it on macOS, under sandbox-exec with the worker profile: a
// program runs and answers, and one that escaped the JavaScript engine
// (the worker's test-only hook, in Go with the worker's privileges) can
// neither write a file in a temp dir or the home directory, nor read one
// in the home directory, nor connect to a loopback listener.
func TestWorkerUnderSeatbeltOnMacOS(t *testing.T) {
	if runtime.GOOS != "darwin" {
		t.Skip("needs macOS's sandbox-exec and kernel; the worker profile is checked on every system by sandbox's TestSeatbeltWorkerProfile")
	}
	if _, err := os.Stat(sandbox.SeatbeltPath); err != nil {
		t.Skipf("%s is missing on this Mac: %v", sandbox.SeatbeltPath, err)
	}
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	homeDir, err := os.MkdirTemp(home, ".dsh-worker-seatbelt-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(homeDir) })
	secret := filepath.Join(homeDir, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret"), 0o600))
	sink := netsink.New(t, nil)

	p := workertest.Pool(t, jsworker.Options{})
	run := func(source string) jsproto.Done {
		d, err := p.Run(context.Background(), jsproto.Run{Kind: jsproto.KindCode, ComputeMS: 5000, MaxDepth: 1000, Source: source},
			jsworker.Limits{}, none)
		require.NoError(t, err, source)
		return d
	}
	assert.Equal(t, "ran", run(`return "ran"`).Text, "the profile lets the worker run")
	inTmp, inHome := filepath.Join(t.TempDir(), "escaped.txt"), filepath.Join(homeDir, "escaped.txt")
	for _, src := range []string{"//escape:write " + inTmp, "//escape:write " + inHome, "//escape:read " + secret,
		"//escape:connect " + sink.Addr()} {
		d := run(src)
		assert.Contains(t, d.Text, "failed", "%s: %s", src, d.Text)
		assert.NotContains(t, d.Text, "succeeded", src)
	}
	assert.NoFileExists(t, inTmp)
	assert.NoFileExists(t, inHome)
	assert.Zero(t, sink.Conns.Load(), "the escaped worker connected to the loopback listener")
}
