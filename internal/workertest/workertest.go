// Package workertest builds the program worker (cmd/dsh-acp-worker) for
// the tests of the packages that run programs, so that `go test ./...`
// works on a clean clone: [Main] builds it once per test binary, with the
// test-only escape hook (-tags workerescape), and points the agent at it
// through $DSH_ACP_WORKER.
package workertest

import (
	"fmt"
	"os"
	"testing"

	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
	"github.com/dsh-acp/dsh-acp/internal/testbin"
)

// Main builds the worker, sets $DSH_ACP_WORKER, runs the tests and
// removes the build; call it from TestMain: os.Exit(workertest.Main(m)).
// A worker already named by $DSH_ACP_WORKER is used as it is.
func Main(m *testing.M) int {
	if os.Getenv(jsworker.EnvPath) != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "dsh-acp-worker-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "workertest:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	path, err := Build(dir, "workerescape")
	if err != nil {
		fmt.Fprintln(os.Stderr, "workertest:", err)
		return 2
	}
	os.Setenv(jsworker.EnvPath, path)
	return m.Run()
}

// Build builds the worker into dir with the given build tags and returns
// its path.
func Build(dir string, tags string) (string, error) {
	return testbin.Build(dir, testbin.Worker, tags)
}

// Pool returns a pool over the built worker (closed with the test),
// unconfined but for the worker's own confinement.
func Pool(tb testing.TB, o jsworker.Options) *jsworker.Pool {
	tb.Helper()
	if o.Path == "" {
		o.Path = os.Getenv(jsworker.EnvPath)
	}
	if o.Path == "" {
		tb.Fatal("workertest: no worker built (call workertest.Main from TestMain)")
	}
	p := jsworker.NewPool(o)
	tb.Cleanup(p.Close)
	return p
}
