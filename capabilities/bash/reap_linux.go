//go:build linux

package bash

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dsh-acp/dsh-acp/sandbox"
)

// pruneAt is how many tracked sessions make [tracker.add] drop the ones
// that have emptied.
const pruneAt = 64

// tracker remembers the session ids of the commands a tool started (each
// command is spawned as a session leader, so its pid is the id), so that
// the processes they leave behind can be killed with the agent session.
//
// What it finds: every process still in a tracked session or process
// group, wherever it was re-parented (the agent is a child subreaper, so
// orphans stay its descendants). What escapes it in danger-full-access: a
// process that calls setsid itself (a `setsid nohup … &` or a daemon that
// double-forks) gets a session of its own and is not attributable; it is
// adopted by the agent but survives the session. Confined commands do not
// have this gap: their namespace or supervising helper kills them all.
// Session ids are pids and can be reused once a session is empty; tracked
// ids are pruned as they empty to keep that window small.
type tracker struct {
	mu   sync.Mutex
	sids map[int]struct{}
}

// add tracks the session led by p's shell.
func (t *tracker) add(p *process) {
	pid := p.pgid
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sids == nil {
		t.sids = map[int]struct{}{}
	}
	if len(t.sids) >= pruneAt {
		live := liveSessions()
		for sid := range t.sids {
			if _, ok := live[sid]; !ok {
				delete(t.sids, sid)
			}
		}
	}
	t.sids[pid] = struct{}{}
}

// sweepAll kills what every tracked session left behind and forgets them.
func (t *tracker) sweepAll() {
	t.mu.Lock()
	sids := t.sids
	t.sids = nil
	t.mu.Unlock()
	sweep(sids)
}

// sweepSession kills what the session led by pid left behind.
func sweepSession(pid int) {
	sweep(map[int]struct{}{pid: {}})
}

// sweep SIGKILLs every process whose session id or process group is in
// sids, until a pass finds none, and reaps the ones the agent adopted.
func sweep(sids map[int]struct{}) {
	if len(sids) == 0 {
		return
	}
	self := os.Getpid()
	adopted := map[int]struct{}{}
	for range 10 {
		found := false
		for pid, st := range processes() {
			_, inSession := sids[st.Session]
			_, inGroup := sids[st.PGRP]
			if pid == self || !(inSession || inGroup) {
				continue
			}
			// A session leader is the tool's own child, which its runner
			// reaps; anything else re-parented to us is ours to reap.
			if _, leader := sids[pid]; st.PPID == self && !leader {
				adopted[pid] = struct{}{}
			}
			if st.Zombie {
				continue
			}
			found = true
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if !found {
			break
		}
		time.Sleep(time.Millisecond)
	}
	deadline := time.Now().Add(time.Second)
	for pid := range adopted {
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			if got == pid || (err != nil && !errors.Is(err, syscall.EINTR)) || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// endNamespaces SIGKILLs the children of pid that are the init of a PID
// namespace below ours (bwrap's, with --unshare-pid) and waits up to limit
// for them to be gone: SIGKILL is the one signal that reaches such an init
// from outside, and an init has ended every process of its namespace
// before it turns into a zombie.
func endNamespaces(pid int, limit time.Duration) {
	var inits []int
	for child, st := range processes() {
		if st.PPID == pid && !st.Zombie && namespaceInit(child) && syscall.Kill(child, syscall.SIGKILL) == nil {
			inits = append(inits, child)
		}
	}
	deadline := time.Now().Add(limit)
	for _, p := range inits {
		for time.Now().Before(deadline) {
			if st, ok := sandbox.ReadProc(p); !ok || st.Zombie {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// namespaceInit reports whether pid is 1 in a PID namespace below ours:
// the NSpid line of its status lists its pid in each namespace, from ours
// down to its own.
func namespaceInit(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			return len(f) > 1 && f[len(f)-1] == "1"
		}
	}
	return false
}

// liveSessions returns the session ids in use.
func liveSessions() map[int]struct{} {
	out := map[int]struct{}{}
	for _, st := range processes() {
		out[st.Session] = struct{}{}
	}
	return out
}

// processes reads the process table (parent, group, session of every
// process, zombies included).
func processes() map[int]sandbox.Proc { return sandbox.Processes() }

// setProcAttr makes the command a session leader that the kernel kills
// when the agent dies.
func setProcAttr(a *syscall.SysProcAttr) {
	a.Setsid, a.Setpgid = true, false
	a.Pdeathsig = syscall.SIGKILL
}
