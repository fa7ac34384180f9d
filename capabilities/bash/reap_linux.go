//go:build linux

package bash

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
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

// add tracks the session led by pid.
func (t *tracker) add(pid int) {
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
			_, inSession := sids[st.session]
			_, inGroup := sids[st.pgrp]
			if pid == self || !(inSession || inGroup) {
				continue
			}
			// A session leader is the tool's own child, which its runner
			// reaps; anything else re-parented to us is ours to reap.
			if _, leader := sids[pid]; st.ppid == self && !leader {
				adopted[pid] = struct{}{}
			}
			if st.zombie {
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

// liveSessions returns the session ids in use.
func liveSessions() map[int]struct{} {
	out := map[int]struct{}{}
	for _, st := range processes() {
		out[st.session] = struct{}{}
	}
	return out
}

// procStat holds the fields of /proc/<pid>/stat the tracker needs.
type procStat struct {
	ppid, pgrp, session int
	zombie              bool
}

// processes reads every process's parent, group and session from /proc,
// zombies included (a zombie still holds its pid).
func processes() map[int]procStat {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make(map[int]procStat, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name is parenthesized and may contain anything.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:]) // state ppid pgrp session …
		if len(f) < 4 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		pgrp, _ := strconv.Atoi(string(f[2]))
		session, _ := strconv.Atoi(string(f[3]))
		out[pid] = procStat{ppid: ppid, pgrp: pgrp, session: session, zombie: string(f[0]) == "Z"}
	}
	return out
}

// setProcAttr makes the command a session leader that the kernel kills
// when the agent dies.
func setProcAttr(a *syscall.SysProcAttr) {
	a.Setsid, a.Setpgid = true, false
	a.Pdeathsig = syscall.SIGKILL
}
