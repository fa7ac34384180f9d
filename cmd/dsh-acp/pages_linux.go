//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseStartupPages unmaps the pages of the executable's read-only
// segments that the process has touched so far, and has the kernel map
// them with base pages from now on.
//
// Go runs every linked package's initializer before main: in dsh-acp that
// is some 300 packages, much of whose code is never used again (the
// sqlite store, the MCP client and the keyring serve what a session may
// never ask for). Each first touch of a text page maps the 64 KiB around
// it (fault-around), or the whole folio when the page cache holds the
// executable in large folios, so by the time main runs the initializers
// have mapped most of the text. The same goes for rodata and pclntab,
// whose type descriptors and function tables the initializers and the
// runtime's start read. Dropping the mappings here leaves resident only
// what runs, and what the runtime reads, from now on: measured after
// session/new, the text falls from 6.5 to 4.1 MB and rodata with pclntab
// from 6.2 to about 5 MB (most of rodata comes back at once). The pages
// stay in the page cache (a later touch is a minor fault, not a disk
// read), and unmapped ones are the first the kernel reclaims.
//
// The read-only data is dropped only when nothing can have written to it:
// the executable is linked at fixed addresses (ELF ET_EXEC) with no
// program interpreter and no RELRO segment, as the release builds are
// (pure Go, no cgo). Elsewhere a loader's relocations, or a C library's
// start-up tables (static glibc writes its RELRO segment, then makes it
// read-only; so does the race runtime), live in pages the process wrote,
// and dropping those would undo the writes. The text is never written (a
// debugger's breakpoints aside, see below).
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
	data := unrelocated(exe)
	for _, m := range readOnlyMappings(maps, exe) {
		if err := madvise(m, unix.MADV_NOHUGEPAGE); err != nil {
			return fmt.Errorf("madvise(MADV_NOHUGEPAGE) %x-%x: %w", m.lo, m.hi, err)
		}
		if !m.exec && !data {
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

// unrelocated reports whether the ELF file at path is a 64-bit
// executable that nothing writes into at start-up: linked at fixed
// addresses (ET_EXEC), with no program interpreter (PT_INTERP) and no
// segment made read-only after relocation (PT_GNU_RELRO). It reads the
// two headers by hand: debug/elf would link five more packages (155 KB)
// into the server for these four fields.
func unrelocated(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var h [64]byte                                                                             // the ELF64 header
	if _, err := io.ReadFull(f, h[:]); err != nil || string(h[:4]) != "\x7fELF" || h[4] != 2 { // ELFCLASS64
		return false
	}
	var order binary.ByteOrder = binary.LittleEndian
	if h[5] == 2 { // ELFDATA2MSB
		order = binary.BigEndian
	}
	const (
		etExec     = 2
		ptInterp   = 3
		ptGNURelro = 0x6474e552
	)
	if order.Uint16(h[16:]) != etExec {
		return false
	}
	phoff, phentsize, phnum := order.Uint64(h[32:]), int64(order.Uint16(h[54:])), int64(order.Uint16(h[56:]))
	if phentsize < 4 || phnum == 0 || phnum > 256 {
		return false
	}
	ph := make([]byte, phentsize*phnum)
	if _, err := f.ReadAt(ph, int64(phoff)); err != nil {
		return false
	}
	for i := int64(0); i < phnum; i++ {
		switch order.Uint32(ph[i*phentsize:]) {
		case ptInterp, ptGNURelro:
			return false
		}
	}
	return true
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
