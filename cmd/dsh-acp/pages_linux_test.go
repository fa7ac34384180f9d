//go:build linux

package main

import (
	"bufio"
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

func TestAloneMeansNoOtherFileIsMapped(t *testing.T) {
	static := `00400000-0116e000 r-xp 00000000 fe:00 1234 /opt/dsh acp/dsh-acp
0116e000-01e5e000 r--p 00d6e000 fe:00 1234 /opt/dsh acp/dsh-acp
020e5000-04133000 rw-p 00000000 00:00 0
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
7ffd00030000-7ffd00032000 r-xp 00000000 00:00 0 [vdso]
`
	assert.True(t, alone([]byte(static), "/opt/dsh acp/dsh-acp"))
	dynamic := static + "7f0000002000-7f0000003000 r--p 00000000 fe:00 98 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n"
	assert.False(t, alone([]byte(dynamic), "/opt/dsh acp/dsh-acp"), "a loader is mapped")
}

func TestFixedAddressesReadsTheELFType(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	header := func(data byte, typ [2]byte) []byte {
		h := make([]byte, 64)
		copy(h, "\x7fELF")
		h[4], h[5] = 2, data // 64-bit, byte order
		h[16], h[17] = typ[0], typ[1]
		return h
	}
	assert.True(t, fixedAddresses(write("exec-le", header(1, [2]byte{2, 0}))), "ET_EXEC, little-endian")
	assert.True(t, fixedAddresses(write("exec-be", header(2, [2]byte{0, 2}))), "ET_EXEC, big-endian")
	assert.False(t, fixedAddresses(write("dyn", header(1, [2]byte{3, 0}))), "ET_DYN: a PIE")
	assert.False(t, fixedAddresses(write("short", []byte("\x7fELF"))), "too short")
	assert.False(t, fixedAddresses(write("text", []byte("#!/bin/sh\necho not an ELF file\n"))), "not ELF")
	assert.False(t, fixedAddresses(filepath.Join(dir, "missing")))
}

// mappedRSS is the resident size of this process's executable mappings
// whose permissions start with perm ("r-x" text, "r--" rodata and
// pclntab), from /proc/self/smaps.
func mappedRSS(t *testing.T, perm string) int64 {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	b, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	in, found := false, false
	var rss int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.Contains(f[0], "-") {
			in = strings.Join(f[5:], " ") == exe && strings.HasPrefix(f[1], perm)
			found = found || in
			continue
		}
		if in && len(f) == 3 && f[0] == "Rss:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err)
			rss += kb << 10
		}
	}
	require.True(t, found, "no %s mapping of %s", perm, exe)
	return rss
}

// The release really leaves the text mapping: what stays resident is what
// ran since, and the process goes on running, to its exit (under -race the
// race runtime's tables live in the read-only segment, and dropping those
// pages crashed the exit: a process that maps C libraries keeps its
// read-only data). What the release does to the read-only data of the
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
