//go:build unix

package bash

import "syscall"

// systemSignalName names the Unix signals beyond the portable ones.
func systemSignalName(sig syscall.Signal) (string, bool) {
	switch sig {
	case syscall.SIGUSR1:
		return "SIGUSR1", true
	case syscall.SIGUSR2:
		return "SIGUSR2", true
	case syscall.SIGCHLD:
		return "SIGCHLD", true
	case syscall.SIGCONT:
		return "SIGCONT", true
	case syscall.SIGSTOP:
		return "SIGSTOP", true
	case syscall.SIGTSTP:
		return "SIGTSTP", true
	case syscall.SIGTTIN:
		return "SIGTTIN", true
	case syscall.SIGTTOU:
		return "SIGTTOU", true
	case syscall.SIGURG:
		return "SIGURG", true
	case syscall.SIGXCPU:
		return "SIGXCPU", true
	case syscall.SIGXFSZ:
		return "SIGXFSZ", true
	case syscall.SIGVTALRM:
		return "SIGVTALRM", true
	case syscall.SIGPROF:
		return "SIGPROF", true
	case syscall.SIGWINCH:
		return "SIGWINCH", true
	case syscall.SIGIO:
		return "SIGIO", true
	case syscall.SIGSYS:
		return "SIGSYS", true
	}
	return "", false
}
