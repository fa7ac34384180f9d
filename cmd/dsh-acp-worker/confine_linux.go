package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// capMemory caps the process's address space at what the runtime has
// reserved so far plus mem: Go reserves about a gigabyte of address space
// at start (most never backed), so a bare RLIMIT_AS of mem would not even
// let the runtime start. A program past the cap gets "fatal error: out of
// memory" from the runtime, which the agent reports as the memory limit.
func capMemory(mem int64) error {
	size, err := vmSize()
	if err != nil {
		return err
	}
	lim := uint64(size + mem)
	return unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: lim, Max: lim})
}

// vmSize is the process's VmSize in bytes.
func vmSize() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmSize %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmSize in /proc/self/status")
}

// confine takes away from the worker, irrevocably and for every thread,
// what it never needs: writing any file, TCP and UDP, abstract Unix
// sockets and signals to processes outside it (Landlock, as far as the
// kernel's ABI goes; nothing on a kernel without it, where the sandbox
// backend the agent starts the worker under still holds).
//
// It also asks the kernel to kill the worker when its parent goes: a
// sandbox runner that supervises rather than execs must not leave a
// spinning worker behind when the agent kills it.
func confine() error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_PDEATHSIG: %w", err)
	}
	return landlock.V11.BestEffort().Restrict(landlock.RODirs("/"))
}
