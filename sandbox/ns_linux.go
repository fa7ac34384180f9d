//go:build linux

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// initEnv marks a helper started by [Confined.Setup] in fresh PID and mount
// namespaces, where it acts as their init. The helper removes it from the
// command's environment.
const initEnv = "DSH_SANDBOX_LANDLOCK_INIT"

// nsSpawn is a way for the agent to start the Landlock helper in fresh PID
// and mount namespaces: directly as root, or inside a new user namespace
// that maps the caller to itself (the helper then keeps CAP_SYS_ADMIN in
// that namespace as an ambient capability, for its mounts only).
type nsSpawn struct {
	cloneflags uintptr
	uidMap     []syscall.SysProcIDMap
	gidMap     []syscall.SysProcIDMap
	ambient    []uintptr
}

// nsCandidates lists the ways to try, cheapest first.
func nsCandidates() []*nsSpawn {
	uid, gid := os.Geteuid(), os.Getegid()
	base := uintptr(unix.CLONE_NEWPID | unix.CLONE_NEWNS)
	user := &nsSpawn{
		cloneflags: base | unix.CLONE_NEWUSER,
		uidMap:     []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		gidMap:     []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
	}
	if uid != 0 {
		// exec as a non-root uid drops every capability but the ambient ones.
		user.ambient = []uintptr{unix.CAP_SYS_ADMIN}
		return []*nsSpawn{user}
	}
	return []*nsSpawn{{cloneflags: base}, user}
}

// apply adds the namespaces to cmd and marks the helper as their init.
func (n *nsSpawn) apply(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	a.Cloneflags |= n.cloneflags
	if n.cloneflags&unix.CLONE_NEWUSER != 0 {
		a.UidMappings, a.GidMappings = n.uidMap, n.gidMap
		a.GidMappingsEnableSetgroups = false
		a.AmbientCaps = n.ambient
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, initEnv+"=1")
}

// detectNamespaces returns the first candidate under which `<launcher>
// --probe-ns` runs as a namespace init and can mount, or nil.
func detectNamespaces(ctx context.Context, launcher []string) *nsSpawn {
	for _, n := range nsCandidates() {
		cmd := exec.CommandContext(ctx, launcher[0], append(launcher[1:len(launcher):len(launcher)], "--probe-ns")...)
		cmd.Env = []string{}
		n.apply(cmd)
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		out, err := cmd.Output()
		if err == nil && strings.TrimSpace(string(out)) == probeNS {
			return n
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	return nil
}

// Prepare implements [Preparer]: where Probe found that the host allows
// it, the returned func starts the helper in fresh PID and mount
// namespaces as their init; otherwise the helper supervises the command as
// a subreaper, and the func hands it the policy's Landlock ruleset, built
// once and kept while it holds (see ruleset_linux.go), or is nil when
// that ruleset cannot be built.
//
// With [Policy.NoNetwork] the namespaces include a network namespace of
// the command's own (no interface up, so no address is reachable, over
// any protocol); if the start fails, the retry without Setup still has
// the helper's Landlock network rules.
func (l *Landlock) Prepare(policy Policy) func(cmd *exec.Cmd) {
	l.mu.Lock()
	ns := l.ns
	l.mu.Unlock()
	if ns == nil {
		return l.rulesetSetup(policy)
	}
	if policy.NoNetwork {
		n := *ns
		n.cloneflags |= unix.CLONE_NEWNET
		return n.apply
	}
	return ns.apply
}
