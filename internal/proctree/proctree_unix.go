//go:build unix

package proctree

import (
	"errors"
	"os/exec"
	"syscall"
)

type groupSys struct{}

// Prepare makes cmd lead a new process group when it starts, unless its
// SysProcAttr already makes it a session leader (which leads a group too).
// Other SysProcAttr fields are kept.
func Prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if !cmd.SysProcAttr.Setsid {
		cmd.SysProcAttr.Setpgid = true
	}
}

// KillTree kills the process group led by pid.
func KillTree(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }

func start(cmd *exec.Cmd) (*Group, error) {
	Prepare(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Group{pid: cmd.Process.Pid}, nil
}

func (g *Group) terminate() error { return syscall.Kill(-g.pid, syscall.SIGTERM) }

func (g *Group) kill() error { return syscall.Kill(-g.pid, syscall.SIGKILL) }

func (g *Group) alive() bool {
	err := syscall.Kill(-g.pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func (g *Group) close() error { return nil }
