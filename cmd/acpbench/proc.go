package main

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// tree returns root and its descendants, read from
// /proc/PID/task/TID/children, or from every /proc/PID/stat where that
// file does not exist.
func tree(root int) []int {
	out := []int{root}
	for i := 0; i < len(out); i++ {
		kids, ok := children(out[i])
		if !ok {
			return scanTree(root)
		}
		out = append(out, kids...)
	}
	return out
}

// children lists pid's children; false when the kernel lacks the file.
func children(pid int) ([]int, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, true // gone
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat(dir + "/" + t.Name()); serr == nil {
				return nil, false
			}
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, true
}

// scanTree builds the tree from the parent ids of all processes.
func scanTree(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []int{root}
	}
	kids := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may contain spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, kids[out[i]]...)
	}
	return out
}

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on every Linux ABI Go supports).
const clockTick = 10 * time.Millisecond

// treeCPU is the user+system CPU time consumed so far by root's process
// tree (exited children excluded), with 10 ms resolution.
func treeCPU(root int) time.Duration {
	var total time.Duration
	for _, pid := range tree(root) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		// After the comm: state(0) ppid(1) … utime(11) stime(12).
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(u+s) * clockTick
	}
	return total
}

// memory is the resident set of a process tree, in bytes: Current is
// the sum of VmRSS, Peak the sum of VmHWM (an upper bound of the tree's
// peak, exact for a single process). Mapped files (the executable's text)
// count in VmRSS as far as they are paged in, which depends on the page
// cache; Anon does not.
type memory struct {
	Current, Peak int64
	Anon          int64 // sum of RssAnon: Current without mapped files
	Procs         int
}

// treeMemory reads the memory of root's process tree.
func treeMemory(root int) memory { return memoryOf(tree(root)) }

// memoryOf reads the memory of the given processes.
func memoryOf(pids []int) memory {
	var m memory
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			continue
		}
		m.Procs++
		for _, line := range strings.Split(string(b), "\n") {
			key, val, ok := strings.Cut(line, ":")
			if !ok || (key != "VmRSS" && key != "VmHWM" && key != "RssAnon") {
				continue
			}
			f := strings.Fields(val)
			if len(f) == 0 {
				continue
			}
			kb, _ := strconv.ParseInt(f[0], 10, 64)
			switch key {
			case "VmRSS":
				m.Current += kb << 10
			case "VmHWM":
				m.Peak += kb << 10
			default:
				m.Anon += kb << 10
			}
		}
	}
	return m
}

// sampler polls a tree's resident set and keeps the highest sum seen; the
// tree itself is listed again every 20 samples.
type sampler struct {
	max  atomic.Int64
	stop chan struct{}
	wg   sync.WaitGroup
}

func startSampler(root int, every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		var pids []int
		for i := 0; ; i++ {
			if i%20 == 0 { // listing the tree can cost a scan of /proc
				pids = tree(root)
			}
			if cur := memoryOf(pids).Current; cur > s.max.Load() {
				s.max.Store(cur)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// done stops sampling and returns the highest resident set seen.
func (s *sampler) done() int64 {
	close(s.stop)
	s.wg.Wait()
	return s.max.Load()
}
