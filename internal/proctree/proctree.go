// Package proctree starts a command as a process tree of its own and ends
// the whole tree at once: on Unix the command leads a new process group
// (every process it starts joins it unless it leaves on purpose), on
// Windows it runs in a Job Object that its descendants inherit and that is
// closed with kill-on-close, so nothing it started outlives the tree.
//
// The seam is small on purpose: [Start], [Group.Terminate], [Group.Kill],
// [Group.Alive], [Group.Close] and, for a command started by someone else
// (an SDK's transport), [Prepare] and [KillTree].
package proctree

import "os/exec"

// Start starts cmd as a tree of its own: see [Prepare] for Unix; on
// Windows the command is created suspended, assigned to a fresh Job
// Object and only then resumed, so that no process it starts escapes the
// job. On failure nothing is left running.
func Start(cmd *exec.Cmd) (*Group, error) { return start(cmd) }

// Group is a started tree. Its methods are safe to call after the tree
// ended; errors then are harmless and may be ignored.
type Group struct {
	pid int
	sys groupSys
}

// Pid returns the pid of the tree's first process.
func (g *Group) Pid() int { return g.pid }

// Terminate asks every process of the tree to end: SIGTERM to the group
// on Unix; on Windows, which has no such request for console programs
// without a console, it ends them like Kill.
func (g *Group) Terminate() error { return g.terminate() }

// Kill ends every process of the tree at once (SIGKILL to the group, or
// TerminateJobObject).
func (g *Group) Kill() error { return g.kill() }

// Alive reports whether any process of the tree (a zombie included) is
// still there.
func (g *Group) Alive() bool { return g.alive() }

// Close releases the tree's handle. On Windows it ends whatever is left of
// the tree (the job is kill-on-close); on Unix it does nothing.
func (g *Group) Close() error { return g.close() }
