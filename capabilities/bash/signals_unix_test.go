//go:build unix

package bash

import (
	"syscall"
	"testing"
)

func TestSignalNameUnix(t *testing.T) {
	if got := SignalName(syscall.SIGCHLD); got != "SIGCHLD" {
		t.Errorf("SignalName(SIGCHLD) = %q", got)
	}
}
