//go:build linux

package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/testbin"
)

func TestReadOnlyMappingsAreTheExecutablesPrivateReadOnlyOnes(t *testing.T) {
	maps := `00400000-0116e000 r-xp 00000000 fe:00 1234 /opt/dsh acp/dsh-acp
0116e000-01e5e000 r--p 00d6e000 fe:00 1234 /opt/dsh acp/dsh-acp
01e5e000-020e5000 rw-p 01a5e000 fe:00 1234 /opt/dsh acp/dsh-acp
020e5000-04133000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r-xs 00000000 fe:00 99 /opt/dsh acp/dsh-acp
7f0000002000-7f0000003000 r-xp 00000000 fe:00 98 /usr/lib/other.so
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
`
	got := readOnlyMappings([]byte(maps), "/opt/dsh acp/dsh-acp")
	assert.Equal(t, []span{{0x400000, 0x116e000, true}, {0x116e000, 0x1e5e000, false}}, got,
		"text and rodata of that path: not its data, not a shared mapping, not other files")
}

// elf64 is an ELF64 file of type typ whose program headers have the
// types given, in byte order data (1 little-endian, 2 big-endian).
func elf64(data byte, typ uint16, phdrs ...uint32) []byte {
	var order binary.ByteOrder = binary.LittleEndian
	if data == 2 {
		order = binary.BigEndian
	}
	const phentsize = 56
	b := make([]byte, 64+phentsize*len(phdrs))
	copy(b, "\x7fELF")
	b[4], b[5] = 2, data
	order.PutUint16(b[16:], typ)
	order.PutUint64(b[32:], 64)
	order.PutUint16(b[54:], phentsize)
	order.PutUint16(b[56:], uint16(len(phdrs)))
	for i, p := range phdrs {
		order.PutUint32(b[64+i*phentsize:], p)
	}
	return b
}

func TestUnrelocatedReadsTheELFHeaders(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	const load, interp, relro, note = 1, 3, 0x6474e552, 4
	assert.True(t, unrelocated(write("static", elf64(1, 2, note, load, load, load))), "ET_EXEC, LOAD segments only")
	assert.True(t, unrelocated(write("static-be", elf64(2, 2, load, load))), "big-endian")
	assert.False(t, unrelocated(write("dynamic", elf64(1, 2, interp, load, load))), "a program interpreter: a loader relocates it")
	assert.False(t, unrelocated(write("static-glibc", elf64(1, 2, load, load, relro))), "RELRO: written at start-up, then made read-only")
	assert.False(t, unrelocated(write("pie", elf64(1, 3, load, load))), "ET_DYN: a PIE")
	assert.False(t, unrelocated(write("no-phdrs", elf64(1, 2))), "no program headers")
	cut := elf64(1, 2, load, load)
	assert.False(t, unrelocated(write("cut", cut[:len(cut)-60])), "program headers cut short")
	h32 := elf64(1, 2, load)
	h32[4] = 1
	assert.False(t, unrelocated(write("elf32", h32)), "32-bit")
	assert.False(t, unrelocated(write("text", []byte("#!/bin/sh\necho not an ELF file\n"))), "not ELF")
	assert.False(t, unrelocated(filepath.Join(dir, "missing")))

	// This test binary links the C library (-race does): a loader ran.
	exe, err := os.Executable()
	require.NoError(t, err)
	if b, err := exec.Command("readelf", "-lW", exe).Output(); err == nil && strings.Contains(string(b), "INTERP") {
		assert.False(t, unrelocated(exe), "a test binary with an interpreter")
	}
}

// mappedRSS is the resident size of this process's executable mappings
// whose permissions start with perm ("r-x" text, "r--" rodata and
// pclntab), from /proc/self/smaps.
func mappedRSS(t *testing.T, perm string) int64 {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	return smapsRSS(t, os.Getpid(), exe, perm)
}

// The release really leaves the text mapping: what stays resident is what
// ran since, and the process goes on running, to its exit (under -race the
// race runtime's tables live in the read-only segment, and dropping those
// pages crashed the exit: an executable with a program interpreter or a
// RELRO segment keeps its read-only data). What the release does to the read-only data of the
// release build is measured by TestTheServerLetsGoOfItsStartupPages.
func TestReleaseStartupPagesUnmapsTheText(t *testing.T) {
	if traced() {
		t.Skip("under a debugger the release is skipped")
	}
	text := mappedRSS(t, "r-x")
	require.NoError(t, releaseStartupPages())
	after := mappedRSS(t, "r-x")
	t.Logf("text RSS %d KiB → %d KiB", text>>10, after>>10)
	assert.Less(t, after, text*3/4, "the text the initializers touched left the resident set")
	assert.Positive(t, after, "the code running now came back")
}

// smapsRSS sums the resident size of process pid's mappings of its
// executable exe whose permissions start with perm.
func smapsRSS(t *testing.T, pid int, exe, perm string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	require.NoError(t, err)
	in := false
	var rss int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.Contains(f[0], "-") {
			in = strings.Join(f[5:], " ") == exe && strings.HasPrefix(f[1], perm)
			continue
		}
		if in && len(f) == 3 && f[0] == "Rss:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err)
			rss += kb << 10
		}
	}
	return rss
}

// The release build, answered its initialize, lets go of the text and the
// read-only data its initializers touched: measured in the process, against
// the same build told to keep them (DSH_ACP_STARTUP_PAGES=keep).
func TestTheServerLetsGoOfItsStartupPages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release executable")
	}
	bin, err := testbin.Build(t.TempDir(), testbin.Agent, "")
	require.NoError(t, err)
	require.True(t, unrelocated(bin), "the release build: pure Go, static, fixed addresses")
	resident := func(extra ...string) (text, ro int64) {
		home := t.TempDir()
		cmd := exec.Command(bin)
		cmd.Dir = home
		cmd.Env = append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "XDG_STATE_HOME=" + home, "PATH=" + os.Getenv("PATH"),
			"DSH_ACP_CONFIG=", "DEEPSEEK_API_KEY=test", "DEEPSEEK_BASE_URL=http://127.0.0.1:9/v1"}, extra...)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
		_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
		require.NoError(t, err)
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err)
		require.Contains(t, line, `"id":1`)
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid))
		require.NoError(t, err)
		// The release runs on the side once the answer is out.
		time.Sleep(300 * time.Millisecond)
		return smapsRSS(t, cmd.Process.Pid, exe, "r-x"), smapsRSS(t, cmd.Process.Pid, exe, "r--")
	}
	keptText, keptRO := resident("DSH_ACP_STARTUP_PAGES=keep")
	text, ro := resident()
	t.Logf("text %d → %d KiB, read-only data %d → %d KiB", keptText>>10, text>>10, keptRO>>10, ro>>10)
	assert.Less(t, text, keptText*3/4, "the text the initializers touched left the resident set")
	assert.Less(t, ro, keptRO-512<<10, "so did at least 512 KiB of the read-only data")
}
