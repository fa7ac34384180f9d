//go:build linux

package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// SetNonDumpable makes the calling process non-dumpable: no core dumps,
// and processes of the same uid without CAP_SYS_PTRACE can no longer read
// its /proc/<pid>/environ, mem or root, nor ptrace it, so the API key in
// the agent's environment stays out of their reach. Call it early in main
// (after [MaybeRunHelper]); the children the process starts are dumpable
// again after their execve.
func SetNonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}

// SetChildSubreaper makes the calling process a child subreaper: a process
// orphaned below it (a double fork, a `setsid nohup … &` whose parent
// exited) is re-parented to it rather than to init, so that it stays
// findable among the process's descendants and can be killed with the
// session that started it.
func SetChildSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: prctl(PR_SET_CHILD_SUBREAPER, 1): %w", err)
	}
	return nil
}
