//go:build unix

package acpclient

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// signaled returns the name of the signal that ended a process, if one
// did.
func signaled(ps *os.ProcessState) (string, bool) {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return "", false
	}
	name := unix.SignalName(ws.Signal())
	if name == "" {
		name = ws.Signal().String()
	}
	return name, true
}

// shellArgv is how a command line without args runs.
func shellArgv() []string { return []string{"/bin/sh", "-c"} }
