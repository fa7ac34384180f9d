package bash

import (
	"strconv"
	"syscall"
)

// SignalName returns the conventional uppercase name of sig ("SIGKILL").
// Signals without a well-known name on this system are "SIG<number>".
func SignalName(sig syscall.Signal) string {
	if name, ok := portableSignalName(sig); ok {
		return name
	}
	if name, ok := systemSignalName(sig); ok {
		return name
	}
	return "SIG" + strconv.Itoa(int(sig))
}

// portableSignalName names the signals Go defines on every system
// (Windows has only these, numbered as on Linux).
func portableSignalName(sig syscall.Signal) (string, bool) {
	switch sig {
	case syscall.SIGHUP:
		return "SIGHUP", true
	case syscall.SIGINT:
		return "SIGINT", true
	case syscall.SIGQUIT:
		return "SIGQUIT", true
	case syscall.SIGILL:
		return "SIGILL", true
	case syscall.SIGTRAP:
		return "SIGTRAP", true
	case syscall.SIGABRT:
		return "SIGABRT", true
	case syscall.SIGBUS:
		return "SIGBUS", true
	case syscall.SIGFPE:
		return "SIGFPE", true
	case syscall.SIGKILL:
		return "SIGKILL", true
	case syscall.SIGSEGV:
		return "SIGSEGV", true
	case syscall.SIGPIPE:
		return "SIGPIPE", true
	case syscall.SIGALRM:
		return "SIGALRM", true
	case syscall.SIGTERM:
		return "SIGTERM", true
	}
	return "", false
}
