//go:build unix

package bash

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// procSys is nothing on Unix: the shell's pid is its process group.
type procSys struct{}

// prepareShell makes the command a session leader (setProcAttr, per
// system), before the sandbox's setup adds its own attributes.
func prepareShell(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setProcAttr(cmd.SysProcAttr)
}

// startShell starts the prepared command.
func startShell(cmd *exec.Cmd) (procSys, error) { return procSys{}, cmd.Start() }

func (p *process) signalGroup(sig syscall.Signal) { _ = syscall.Kill(-p.pgid, sig) }

// stopGroup and contGroup freeze and thaw the whole group.
func (p *process) stopGroup() { p.signalGroup(syscall.SIGSTOP) }
func (p *process) contGroup() { p.signalGroup(syscall.SIGCONT) }

// termGroup asks the group to end (SIGTERM); killGroup ends it (SIGKILL).
func (p *process) termGroup() { p.signalGroup(syscall.SIGTERM) }
func (p *process) killGroup() { p.signalGroup(syscall.SIGKILL) }

// groupAlive reports whether any process (zombies included) is still in the
// group.
func (p *process) groupAlive() bool {
	err := syscall.Kill(-p.pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// signaled returns the conventional name of the signal that ended the
// shell, if one did.
func signaled(ps *os.ProcessState) (string, bool) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return SignalName(ws.Signal()), true
	}
	return "", false
}
