//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

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

// Proc is what the process table says of one process: the fields of
// /proc/<pid>/stat the sandbox and the tools that reap children need.
type Proc struct {
	PPID, PGRP, Session int
	// Zombie reports a process that exited and was not waited for yet (it
	// still holds its pid).
	Zombie bool
}

// ReadProc reads pid's entry of the process table.
func ReadProc(pid int) (Proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, false
	}
	return parseProc(b)
}

// Processes reads every process's entry, zombies included.
func Processes() map[int]Proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make(map[int]Proc, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := ReadProc(pid); ok {
			out[pid] = st
		}
	}
	return out
}

// parseProc parses a /proc/<pid>/stat line: `pid (comm) state ppid pgrp
// session …`, where comm is parenthesized and may contain anything.
func parseProc(b []byte) (Proc, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Proc{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 4 {
		return Proc{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	session, err3 := strconv.Atoi(string(f[3]))
	if err1 != nil || err2 != nil || err3 != nil {
		return Proc{}, false
	}
	return Proc{PPID: ppid, PGRP: pgrp, Session: session, Zombie: string(f[0]) == "Z"}, true
}
