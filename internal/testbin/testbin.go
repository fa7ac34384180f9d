// Package testbin builds the module's executables for the tests that run
// them as processes (the replay harness, the reliability suite, acpbench,
// the program worker's users), all with one set of build settings: the
// release's (CGO_ENABLED=0, see `make build`), so that what the tests run
// is what ships, and every such build shares one set of compiled packages
// in the build cache (and the cache `make cross` filled for this system)
// instead of compiling the whole graph again per setting.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// module is the module's import path; executables are module/cmd/<name>.
const module = "github.com/dsh-acp/dsh-acp"

// Agent and Worker are the executables' names.
const (
	Agent  = "dsh-acp"
	Worker = "dsh-acp-worker"
)

// Build builds the executable cmd/<name> into dir, with the build tags
// given (comma-separated, "" for none), and returns its path.
func Build(dir, name, tags string) (string, error) {
	out := filepath.Join(dir, name)
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	// go test puts its own toolchain first on PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building %s needs the go command: %w", name, err)
	}
	args := []string{"build", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command(goTool, append(args, module+"/cmd/"+name)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", name, err, b)
	}
	return out, nil
}
