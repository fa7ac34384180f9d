package bash

import (
	"syscall"
	"testing"
)

func TestSignalName(t *testing.T) {
	for sig, want := range map[syscall.Signal]string{
		syscall.SIGKILL:     "SIGKILL", // portable
		syscall.SIGTERM:     "SIGTERM",
		syscall.Signal(200): "SIG200", // no name anywhere
	} {
		if got := SignalName(sig); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", int(sig), got, want)
		}
	}
}
