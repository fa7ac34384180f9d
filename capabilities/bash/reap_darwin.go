//go:build unix && !linux

package bash

import (
	"errors"
	"sync"
	"syscall"
	"time"
)

// tracker remembers the process groups of the commands a tool started
// (each command leads its own session, so its pid is its group id), so
// that what they leave running (a `server &`) is killed with the agent
// session: sweepAll SIGKILLs every tracked group.
//
// Without /proc (macOS) nothing finds a process that left its group: one
// that calls setsid itself (a `setsid nohup … &`, a daemon that
// double-forks) survives the session, confined or not, since macOS has no
// PID namespace. Group ids are pids and can be reused once a group is
// empty; add drops the tracked groups that have emptied to keep that
// window small.
type tracker struct {
	mu    sync.Mutex
	pgids map[int]struct{}
}

// add tracks the group led by p's shell.
func (t *tracker) add(p *process) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pgids == nil {
		t.pgids = map[int]struct{}{}
	}
	for g := range t.pgids {
		if !groupExists(g) {
			delete(t.pgids, g)
		}
	}
	t.pgids[p.pgid] = struct{}{}
}

// sweepAll kills every tracked group and forgets them.
func (t *tracker) sweepAll() {
	t.mu.Lock()
	pgids := t.pgids
	t.pgids = nil
	t.mu.Unlock()
	for g := range pgids {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
}

// sweepSession kills what is left in the group led by pid.
func sweepSession(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// endNamespaces has nothing to end: macOS has no PID namespaces.
func endNamespaces(int, time.Duration) {}

func groupExists(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
