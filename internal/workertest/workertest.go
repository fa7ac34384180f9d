// Package workertest builds the program worker (cmd/dsh-acp-worker) for
// the tests of the packages that run programs, so that `go test ./...`
// works on a clean clone: [Main] builds it once per test binary, with the
// test-only escape hook (-tags workerescape), and points the agent at it
// through $DSH_ACP_WORKER.
package workertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/dsh-acp/dsh-acp/capabilities/jsworker"
)

// Package is the worker's import path.
const Package = "github.com/dsh-acp/dsh-acp/cmd/dsh-acp-worker"

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
	name := jsworker.Executable
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	out := filepath.Join(dir, name)
	// go test puts its own toolchain first on PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building the worker needs the go command: %w", err)
	}
	args := []string{"build", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command(goTool, append(args, Package)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", Package, err, b)
	}
	return out, nil
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
