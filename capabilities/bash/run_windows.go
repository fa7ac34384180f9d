//go:build windows

package bash

import (
	"os"
	"os/exec"

	"github.com/dsh-acp/dsh-acp/internal/proctree"
)

// procSys holds the shell's Job Object: every process the command starts
// is in it, and ending the job ends them all.
type procSys struct {
	group *proctree.Group
}

// prepareShell has nothing to add on Windows before the start.
func prepareShell(*exec.Cmd) {}

// startShell starts the command suspended, puts it into a fresh
// kill-on-close Job Object and resumes it (proctree.Start).
func startShell(cmd *exec.Cmd) (procSys, error) {
	g, err := proctree.Start(cmd)
	return procSys{group: g}, err
}

// Windows has no stop and continue for a job's processes; the confined
// path that uses them does not exist here (no sandbox backend).
func (p *process) stopGroup() {}
func (p *process) contGroup() {}

// termGroup and killGroup end every process of the job at once: console
// programs without a console have no polite request to end.
func (p *process) termGroup() { _ = p.sys.group.Terminate() }
func (p *process) killGroup() { _ = p.sys.group.Kill() }

// groupAlive reports whether the job still has a live process.
func (p *process) groupAlive() bool { return p.sys.group.Alive() }

// signaled reports no signal: Windows processes end with an exit code.
func signaled(*os.ProcessState) (string, bool) { return "", false }
