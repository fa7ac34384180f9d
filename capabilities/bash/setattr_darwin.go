//go:build unix && !linux

package bash

import "syscall"

// setProcAttr makes the command a session leader. There is no
// parent-death signal outside Linux: a command outlives an agent that
// crashes (one that exits normally ends its commands first).
func setProcAttr(a *syscall.SysProcAttr) { a.Setsid, a.Setpgid = true, false }
