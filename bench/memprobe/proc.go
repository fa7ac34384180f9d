//go:build linux

package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// pageSize is the base page size pagemap reports in.
const pageSize = 4096

// mappingKind classifies a mapping of the process.
type mappingKind string

// The kinds of mapping, in print order.
const (
	kindText   mappingKind = "text (r-x)"
	kindRodata mappingKind = "rodata+pclntab (r--)"
	kindData   mappingKind = "data (rw-)"
	kindBSS    mappingKind = "bss"
	kindAnon   mappingKind = "anonymous (heap, stacks)"
	kindOther  mappingKind = "other (vdso, files)"
)

var mappingKinds = []mappingKind{kindText, kindRodata, kindData, kindBSS, kindAnon, kindOther}

// mapping is one entry of /proc/PID/smaps.
type mapping struct {
	lo, hi uint64
	perms  string
	path   string
	kind   mappingKind
	fields map[string]int64 // in bytes
}

// section is one loaded ELF section.
type section struct {
	name       string
	addr, size uint64
}

// fn is one Go function of the text.
type fn struct {
	pkg        string
	entry, end uint64
}

// layout is the loaded image of the executable.
type layout struct {
	exe      string
	lo, hi   uint64 // page-aligned bounds of the loaded segments
	sections []section
	funcs    []fn
}

func readLayout(exe string) (*layout, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l := &layout{exe: exe, lo: ^uint64(0)}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		l.lo = min(l.lo, p.Vaddr&^(pageSize-1))
		l.hi = max(l.hi, (p.Vaddr+p.Memsz+pageSize-1)&^(pageSize-1))
	}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && s.Addr != 0 && s.Size > 0 {
			l.sections = append(l.sections, section{name: s.Name, addr: s.Addr, size: s.Size})
		}
	}
	text, pcln := f.Section(".text"), f.Section(".gopclntab")
	if text == nil || pcln == nil {
		return l, nil
	}
	data, err := pcln.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: .gopclntab: %w", exe, err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil, fmt.Errorf("%s: pclntab: %w", exe, err)
	}
	for _, fu := range tab.Funcs {
		pkg := fu.PackageName()
		if pkg == "" {
			pkg = "(runtime internals)"
		}
		l.funcs = append(l.funcs, fn{pkg: pkg, entry: fu.Entry, end: fu.End})
	}
	return l, nil
}

func readMemory(pid int, label string, l *layout) (reading, error) {
	r := reading{label: label}
	var err error
	if r.rollup, err = readRollup(pid); err != nil {
		return r, err
	}
	if r.maps, err = readSmaps(pid, l.exe); err != nil {
		return r, err
	}
	if r.resides, err = readPresent(pid, l.lo, l.hi); err != nil {
		return r, err
	}
	r.minflt, r.cpu, err = readStat(pid)
	return r, err
}

// readStat reads the minor page faults and the CPU time (user + system)
// from /proc/PID/stat.
func readStat(pid int) (minflt int64, cpu time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// Fields 10 (minflt), 14 (utime) and 15 (stime) of stat(5); f[0] is field 3.
	minflt, _ = strconv.ParseInt(f[7], 10, 64)
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return minflt, time.Duration(ut+st) * (time.Second / clockTicks), nil
}

// clockTicks is USER_HZ, the unit of utime and stime (100 on Linux).
const clockTicks = 100

// readRollup parses /proc/PID/smaps_rollup.
func readRollup(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := field(line); ok {
			out[k] = v
		}
	}
	return out, nil
}

// field parses a "Key:   123 kB" line.
func field(line string) (string, int64, bool) {
	k, rest, ok := strings.Cut(line, ":")
	if !ok || strings.Contains(k, " ") {
		return "", 0, false
	}
	rest = strings.TrimSpace(rest)
	num, unit, _ := strings.Cut(rest, " ")
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return "", 0, false
	}
	if unit == "kB" {
		v *= 1024
	}
	return k, v, true
}

// readSmaps parses /proc/PID/smaps and classifies every mapping.
func readSmaps(pid int, exe string) ([]mapping, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := field(line); ok {
			if len(out) > 0 {
				out[len(out)-1].fields[k] = v
			}
			continue
		}
		parts := strings.Fields(line)
		if len(parts) < 5 || !strings.Contains(parts[0], "-") {
			continue
		}
		lo, hi, _ := strings.Cut(parts[0], "-")
		m := mapping{perms: parts[1], fields: map[string]int64{}}
		m.lo, _ = strconv.ParseUint(lo, 16, 64)
		m.hi, _ = strconv.ParseUint(hi, 16, 64)
		if len(parts) > 5 {
			m.path = strings.Join(parts[5:], " ")
		}
		m.kind = classify(m, out, exe)
		out = append(out, m)
	}
	return out, sc.Err()
}

func classify(m mapping, before []mapping, exe string) mappingKind {
	switch {
	case m.path == exe && strings.HasPrefix(m.perms, "r-x"):
		return kindText
	case m.path == exe && strings.HasPrefix(m.perms, "r--"):
		return kindRodata
	case m.path == exe:
		return kindData
	case m.path == "" && len(before) > 0 && before[len(before)-1].hi == m.lo &&
		(before[len(before)-1].kind == kindData || before[len(before)-1].kind == kindBSS):
		return kindBSS
	case m.path == "" || m.path == "[heap]" || strings.HasPrefix(m.path, "[stack"):
		return kindAnon
	}
	return kindOther
}

// readPresent reads, from /proc/PID/pagemap, which pages of [lo, hi) are
// resident (bit 63 of each entry).
func readPresent(pid int, lo, hi uint64) ([]bool, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n := (hi - lo) / pageSize
	buf := make([]byte, n*8)
	if _, err := f.ReadAt(buf, int64(lo/pageSize*8)); err != nil {
		return nil, fmt.Errorf("pagemap: %w", err)
	}
	out := make([]bool, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(buf[i*8:])&(1<<63) != 0
	}
	return out, nil
}

// countResident counts the resident pages overlapping [a, b).
func countResident(res []bool, l *layout, a, b uint64) int {
	n := 0
	for pg := a &^ (pageSize - 1); pg < b; pg += pageSize {
		if i := (pg - l.lo) / pageSize; pg >= l.lo && i < uint64(len(res)) && res[i] {
			n++
		}
	}
	return n
}

// residentBytes is how many bytes of [a, b) lie on resident pages.
func residentBytes(res []bool, l *layout, a, b uint64) int64 {
	var n int64
	for pg := a &^ (pageSize - 1); pg < b; pg += pageSize {
		i := (pg - l.lo) / pageSize
		if pg < l.lo || i >= uint64(len(res)) || !res[i] {
			continue
		}
		n += int64(min(b, pg+pageSize) - max(a, pg))
	}
	return n
}
