package bash

import (
	"fmt"
	"os/exec"
)

// command returns the unstarted command that runs argv in dir with env,
// argv[0] resolved from PATH (on Windows, "bash" is Git for Windows'
// bash.exe: see findWindowsBash). The runner owns everything after that:
// process group, stdio, signals, waiting. Confinement happens before: a
// confined call's argv is already the sandbox's (tools contract § 3).
func command(argv []string, dir string, env []string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("bash: empty argv")
	}
	prog, err := program(argv[0])
	if err != nil {
		return nil, fmt.Errorf("bash: %w", err)
	}
	cmd := exec.Command(prog, argv[1:]...)
	if cmd.Err != nil {
		return nil, fmt.Errorf("bash: %w", cmd.Err)
	}
	cmd.Dir = dir
	cmd.Env = env
	return cmd, nil
}

// Program returns the bash program commands run through: "bash" from PATH
// on Unix, Git for Windows' bash.exe on Windows (an error naming what to
// install when there is none). Other families that run shell lines (hooks)
// use it too.
func Program() (string, error) { return program("bash") }
