package bash

import (
	"fmt"
	"os/exec"
)

// command returns the unstarted command that runs argv in dir with env,
// argv[0] resolved from PATH. The runner owns everything after that:
// process group, stdio, signals, waiting. Confinement happens before: a
// confined call's argv is already the sandbox's (tools contract § 3).
func command(argv []string, dir string, env []string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("bash: empty argv")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if cmd.Err != nil {
		return nil, fmt.Errorf("bash: %w", cmd.Err)
	}
	cmd.Dir = dir
	cmd.Env = env
	return cmd, nil
}
