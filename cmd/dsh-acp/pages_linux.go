//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseStartupPages unmaps the pages of the executable's text that the
// process has touched so far, and has the kernel map the executable's
// read-only segments with base pages from now on.
//
// Go runs every linked package's initializer before main: in dsh-acp that
// is some 380 packages, much of whose code is never used again (esbuild,
// goja, the HTML and MCP libraries serve tools a session may never call).
// Each first touch of a text page maps the 64 KiB around it (fault-around),
// or the whole folio when the page cache holds the executable in large
// folios, so by the time main runs the initializers have mapped about two
// thirds of the text (9 of 14 MB); the server itself then uses about 4 MB of
// it. Dropping the text mappings here leaves resident only what runs from
// now on. The pages stay in the page cache (a later touch is a minor fault,
// not a disk read), and unmapped ones are the first the kernel reclaims.
// rodata and pclntab are not dropped: the runtime reads most of them again
// at once (type descriptors, itabs, stack maps), so that would cost faults
// and save little.
//
// MADV_NOHUGEPAGE keeps the kernel from mapping 2 MiB page-cache folios of
// the executable as huge pages (FilePmdMapped) from now on. A process being
// traced is left alone: a debugger's breakpoints live in private copies of
// text pages that MADV_DONTNEED would discard.
func releaseStartupPages() error {
	if traced() {
		return nil
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	for _, m := range readOnlyMappings(maps, exe) {
		if err := madvise(m, unix.MADV_NOHUGEPAGE); err != nil {
			return fmt.Errorf("madvise(MADV_NOHUGEPAGE) %x-%x: %w", m.lo, m.hi, err)
		}
		if !m.exec {
			continue
		}
		if err := madvise(m, unix.MADV_DONTNEED); err != nil {
			return fmt.Errorf("madvise(MADV_DONTNEED) %x-%x: %w", m.lo, m.hi, err)
		}
	}
	return nil
}

// span is an address range [lo, hi).
type span struct {
	lo, hi uintptr
	exec   bool
}

// readOnlyMappings returns the private, non-writable mappings of path in
// the /proc/PID/maps text.
func readOnlyMappings(maps []byte, path string) []span {
	var out []span
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// 00400000-0116e000 r-xp 00000000 fe:00 1234 /path/to/exe
		f := strings.Fields(sc.Text())
		if len(f) < 6 || strings.Join(f[5:], " ") != path || len(f[1]) != 4 || f[1][1] == 'w' || f[1][3] != 'p' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b <= a {
			continue
		}
		out = append(out, span{uintptr(a), uintptr(b), f[1][2] == 'x'})
	}
	return out
}

func madvise(s span, advice int) error {
	// Through the raw syscall: the range is not Go memory, so there is no
	// slice to hand to unix.Madvise.
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, s.lo, s.hi-s.lo, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

// traced reports whether a tracer (a debugger) is attached.
func traced() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "TracerPid:"); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return false
}
