//go:build !linux

package bash

import (
	"syscall"
	"time"
)

// tracker does nothing outside Linux (there is no /proc to find the
// processes of a session).
type tracker struct{}

func (*tracker) add(int)   {}
func (*tracker) sweepAll() {}

func sweepSession(int) {}

func endNamespaces(int, time.Duration) {}

// setProcAttr makes the command a session leader.
func setProcAttr(a *syscall.SysProcAttr) { a.Setsid, a.Setpgid = true, false }
