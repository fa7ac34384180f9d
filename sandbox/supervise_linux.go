//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// forwarded are the signals the helper passes on to its command.
var forwarded = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP}

// supervise runs path/argv as the helper's child and returns the helper's
// exit status once it has ended. As a namespace init the command gets its
// own process group and the forwarded signals; otherwise it stays in the
// helper's group and, when it ends, every descendant left is killed.
// parent is the agent's pid, to tell its death from its signals.
func supervise(path string, argv, env []string, isInit bool, parent int) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	// A bare fork and exec: the helper reaps by itself, os/exec's process
	// bookkeeping would only cost time.
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: isInit, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return helperFail(fmt.Errorf("exec %s: %w", argv[0], err))
	}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				switch {
				case isInit:
					forward(pid, s.(syscall.Signal))
				case os.Getppid() != parent:
					// The agent died: nobody else will end the command.
					for _, c := range children() {
						_ = unix.Kill(c, unix.SIGKILL)
					}
					killDetached()
				default:
					// The command and its group got the signal from the
					// agent already; those that left the group never will,
					// and must not outlive a helper that may be killed next.
					killDetached()
				}
			case <-stop:
				return
			}
		}
	}()
	ws, err := reap(pid)
	close(stop)
	signal.Stop(sigs)
	if err != nil {
		return helperFail(err)
	}
	if !isInit {
		// Everything still below us is the command's leftovers (orphans
		// were re-parented to us); the namespace init leaves this to the
		// kernel, which kills the namespace when its init exits.
		killDescendants()
	}
	return exitStatus(ws, !isInit)
}

// forward passes sig to the command's process group, or to the command
// alone if it left its group.
func forward(pid int, sig syscall.Signal) {
	if err := unix.Kill(-pid, sig); errors.Is(err, unix.ESRCH) {
		_ = unix.Kill(pid, sig)
	}
}

// reap reaps every child (adopted orphans included) until pid exits, and
// returns pid's wait status.
func reap(pid int) (unix.WaitStatus, error) {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, fmt.Errorf("wait: %w", err)
		case got == pid && (ws.Exited() || ws.Signaled()):
			return ws, nil
		}
	}
}

// killDescendants kills and reaps every descendant: the children are
// killed, and each one reaped hands its own children to us (we are a
// subreaper), until none is left. When the command left nothing, the first
// wait says so and /proc is never read.
func killDescendants() {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR) || got > 0:
			continue
		case err != nil: // ECHILD: no child left
			return
		}
		for _, c := range children() {
			_ = unix.Kill(c, unix.SIGKILL)
		}
		if _, err := unix.Wait4(-1, &ws, 0, nil); err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// killDetached kills the descendants outside the helper's process group
// (moved there by setsid or setpgid); their children reach us as orphans
// and are reaped by [reap].
func killDetached() {
	pgrp := unix.Getpgrp()
	var walk func(pids []int)
	walk = func(pids []int) {
		for _, p := range pids {
			walk(childrenOf(p))
			if g, err := unix.Getpgid(p); err == nil && g != pgrp {
				_ = unix.Kill(p, unix.SIGKILL)
			}
		}
	}
	walk(children())
}

// children returns the calling process's children.
func children() []int { return childrenOf(os.Getpid()) }

// childrenOf lists pid's children from /proc/<pid>/task/*/children, or by
// scanning /proc when the kernel lacks that file.
func childrenOf(pid int) []int {
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	if err != nil || len(tasks) == 0 {
		return scanChildren(pid)
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if errors.Is(err, os.ErrNotExist) && len(out) == 0 {
			return scanChildren(pid)
		}
		for _, f := range bytes.Fields(b) {
			if n, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// scanChildren finds pid's children by their parent pid in /proc/*/stat.
func scanChildren(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := ReadProc(n); ok && st.PPID == pid {
			out = append(out, n)
		}
	}
	return out
}

// exitStatus turns the command's wait status into the helper's: its exit
// code, or 128+n for a signal n. With reraise the helper dies of that
// signal itself where the Go runtime allows it (SIGTERM, SIGINT, SIGHUP
// and SIGKILL), so the caller sees what an unconfined run would show.
func exitStatus(ws unix.WaitStatus, reraise bool) int {
	if !ws.Signaled() {
		return ws.ExitStatus()
	}
	sig := ws.Signal()
	if reraise {
		switch sig {
		case unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGKILL:
			signal.Reset(sig)
			_ = unix.Kill(os.Getpid(), sig)
			time.Sleep(time.Second) // the signal is on its way
		}
	}
	return 128 + int(sig)
}
