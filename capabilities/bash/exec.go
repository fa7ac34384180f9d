package bash

import (
	"context"
	"fmt"
	"os/exec"
)

// Executor turns an argv into an unstarted command. It is the seam where a
// sandboxing executor wraps the argv (tools contract § 3: under the sandbox
// the spawned command becomes `bash -c "exec <quoted confined argv>"`); the
// runner owns everything after that: process group, stdio, signals, waiting.
//
// The returned command must not be started and must leave Stdin, Stdout and
// Stderr unset; the runner sets them. SysProcAttr may be set; the runner
// makes the command the leader of a new session (Setsid, which replaces
// Setpgid) with SIGKILL as its parent-death signal.
type Executor interface {
	// Command returns the command that runs argv in dir with env.
	Command(ctx context.Context, argv []string, dir string, env []string) (*exec.Cmd, error)
}

// LocalExecutor runs argv directly on the host, resolving argv[0] from PATH.
type LocalExecutor struct{}

// Command implements Executor.
func (LocalExecutor) Command(_ context.Context, argv []string, dir string, env []string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("local executor: empty argv")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if cmd.Err != nil {
		return nil, fmt.Errorf("local executor: %w", cmd.Err)
	}
	cmd.Dir = dir
	cmd.Env = env
	return cmd, nil
}
