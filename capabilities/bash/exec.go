package bash

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// Executor turns an argv into an unstarted command. It is the seam where a
// sandboxing executor wraps the argv (tools contract § 3: under the sandbox
// the spawned command becomes `bash -c "exec <quoted confined argv>"`); the
// runner owns everything after that: process group, stdio, signals, waiting.
//
// The returned command must not be started and must leave Stdin, Stdout and
// Stderr unset; the runner sets them. SysProcAttr may be set; the runner adds
// Setpgid to it.
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

// secretName matches environment variable names that are never passed to
// commands.
var secretName = regexp.MustCompile(`(?i)KEY|SECRET|TOKEN`)

// forcedEnv returns the variables appended to every command's environment,
// in this order.
func forcedEnv() []string {
	return []string{"NO_COLOR=1", "TERM=dumb", "PAGER=cat", "GIT_PAGER=cat"}
}

// CommandEnv derives a command's environment from the agent's: every
// variable whose name matches /KEY|SECRET|TOKEN/i is dropped, and NO_COLOR=1,
// TERM=dumb, PAGER=cat and GIT_PAGER=cat are set (replacing any inherited
// values).
func CommandEnv(environ []string) []string {
	forced := forcedEnv()
	out := make([]string, 0, len(environ)+len(forced))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if secretName.MatchString(name) || isForced(name) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, forced...)
}

func isForced(name string) bool {
	for _, kv := range forcedEnv() {
		if n, _, _ := strings.Cut(kv, "="); n == name {
			return true
		}
	}
	return false
}
