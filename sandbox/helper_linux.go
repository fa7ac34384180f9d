//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// fullABI is the first Landlock ABI that handles every file-write right the
// helper asks for (V3 adds truncate; V2 added refer). Older kernels enforce
// only part of the policy.
const fullABI = 3

// RunLandlockHelper is the helper's entry point; args are the arguments
// after [HelperArg]. With `--probe` it restricts itself to the read-only
// policy, checks that a write is really denied, prints `landlock: fully
// enforced` or `landlock: partially enforced (older ABI)` and returns 0.
// With `--probe-ns` (started by the agent in fresh namespaces) it checks
// that it is their init and can mount, and prints `landlock: namespaces`.
//
// Otherwise it applies `--ro P` (read and execute beneath P) and `--rw P`
// (read and write beneath P, or to the file P; never device nodes) with
// Landlock, which also sets no_new_privs, drops every capability a root
// command would inherit, and runs argv as its child until it ends:
//
//   - as the init of fresh PID and mount namespaces (started through
//     [Confined.Setup]), it mounts a private /proc and binds `--tmp DIR` at
//     /tmp; the command gets its own process group, SIGTERM, SIGINT and
//     SIGHUP are forwarded to it, and when it exits the kernel kills
//     whatever is left in the namespace;
//   - otherwise it is a child subreaper: the command shares its process
//     group (the agent's signals reach both), `--tmp DIR` replaces /tmp in
//     the writable set with TMPDIR=DIR, and when the command exits, every
//     remaining descendant is killed. On SIGTERM, SIGINT or SIGHUP the
//     descendants that left the group are killed at once, and all of them
//     when the agent has died (its death sends the helper a SIGTERM).
//
// It returns the command's exit status, or 128+n when a signal n ended the
// command (where it can, the helper outside a namespace re-raises that
// signal on itself instead). On its own failure it prints `landlock-run:
// <reason>` to stderr and returns 125.
func RunLandlockHelper(args []string) int {
	h, err := parseHelperArgs(args)
	if err != nil {
		return helperFail(err)
	}
	isInit := os.Getenv(initEnv) == "1" && os.Getpid() == 1
	_ = os.Unsetenv(initEnv)
	inherited, err := inheritedRuleset()
	if err != nil {
		return helperFail(err)
	}
	if inherited != nil {
		defer inherited.close()
	}
	switch {
	case h.probeNS && !isInit:
		return helperFail(errors.New("--probe-ns must run as the init of fresh namespaces"))
	case h.probeNS:
		return runProbeNS()
	case h.probe:
		return runProbe()
	}
	if h.tmp != "" {
		if st, err := os.Stat(h.tmp); err != nil {
			return helperFail(fmt.Errorf("--tmp: %w", err))
		} else if !st.IsDir() {
			return helperFail(fmt.Errorf("--tmp: %s is not a directory", h.tmp))
		}
	}
	// Capability sets and the parent-death signal belong to a thread: the
	// command is forked from this one, so it is the one to set up.
	runtime.LockOSThread()
	parent := os.Getppid()
	hide := h.hide // hidden by rules, as a subreaper
	if isInit {
		err = enterNamespaces(&h)
		if err == nil {
			err = containMounts(h.protect, h.hide)
		}
		hide = nil // hidden by mounts
	} else {
		err = prepareSupervised(&h, parent)
	}
	if err != nil {
		return helperFail(err)
	}
	if inherited != nil && !isInit {
		err = restrictTo(inherited)
	} else {
		_, err = restrict(h.ro, h.rw, hide, h.noNet)
	}
	if err != nil {
		return helperFail(err)
	}
	if err := dropCapabilities(); err != nil {
		return helperFail(err)
	}
	path, err := exec.LookPath(h.argv[0])
	if err != nil {
		return helperFail(err) // already reads `exec: "name": …`
	}
	return supervise(path, h.argv, os.Environ(), isInit, parent)
}

// helperFail reports the helper's own failure in its dialect.
func helperFail(err error) int {
	fmt.Fprintf(os.Stderr, "landlock-run: %v\n", err)
	return HelperExitCode
}

// enterNamespaces prepares the helper's fresh mount namespace: mounts stop
// propagating to the host, /proc shows only this PID namespace, and the
// session's temp dir becomes /tmp.
func enterNamespaces(h *helperArgs) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if h.tmp == "" {
		return nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("getwd: %w", err)
	}
	// Paths beneath /tmp that must stay visible: the writable ones and
	// --show (the workspace root), and the working directory.
	var keep []string
	for _, p := range append(append(slices.Clone(h.rw), h.show...), cwd) {
		p = filepath.Clean(p)
		if p == "/tmp" || !beneath(p, "/tmp") || slices.ContainsFunc(keep, func(k string) bool { return beneath(p, k) }) {
			continue
		}
		keep = append(keep, p)
	}
	if err := bindTmp(h.tmp, keep); err != nil {
		return err
	}
	if slices.ContainsFunc(keep, func(k string) bool { return beneath(cwd, k) }) {
		if err := os.Chdir(cwd); err != nil {
			return fmt.Errorf("chdir %s: %w", cwd, err)
		}
	}
	return os.Setenv("TMPDIR", "/tmp")
}

// bindTmp binds dir at /tmp, then each path of keep (beneath the old /tmp)
// at its place again.
func bindTmp(dir string, keep []string) error {
	fds := make([]int, len(keep))
	for i, p := range keep {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		defer unix.Close(fd)
		fds[i] = fd
	}
	if err := unix.Mount(dir, "/tmp", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s at /tmp: %w", dir, err)
	}
	for i, p := range keep {
		var st unix.Stat_t
		if err := unix.Fstat(fds[i], &st); err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("mount point %s: %w", p, err)
			}
		} else {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return fmt.Errorf("mount point %s: %w", p, err)
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return fmt.Errorf("mount point %s: %w", p, err)
			}
			_ = f.Close()
		}
		if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(fds[i]), p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s again beneath /tmp: %w", p, err)
		}
	}
	return nil
}

// prepareSupervised readies the helper that runs without namespaces: it
// becomes a subreaper, learns of its parent's death by a SIGTERM (instead of
// dying at once, so that it can take the command's processes down with
// it), and the session's temp dir replaces /tmp.
func prepareSupervised(h *helperArgs, parent int) error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become a subreaper: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGTERM), 0, 0, 0); err != nil {
		return fmt.Errorf("set the parent-death signal: %w", err)
	}
	if os.Getppid() != parent {
		return errors.New("the agent is gone")
	}
	if h.tmp == "" {
		return nil
	}
	h.rw = supervisedRW(h.rw, h.tmp)
	return os.Setenv("TMPDIR", h.tmp)
}

// supervisedRW is the writable set of a helper outside namespaces: the
// session's temp dir tmp, when set, replaces /tmp.
func supervisedRW(rw []string, tmp string) []string {
	out := slices.Clone(rw)
	for i, p := range out {
		if tmp != "" && filepath.Clean(p) == "/tmp" {
			out[i] = tmp
		}
	}
	return out
}

// rwDirRights are the rights `--rw DIR` grants: every file right of ABI V3
// except creating device nodes (root could otherwise make a block device
// and write the disk beneath every rule).
const rwDirRights = landlock.AccessFSSet(llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile |
	llsys.AccessFSReadDir | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeDir |
	llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo | llsys.AccessFSMakeSym |
	llsys.AccessFSTruncate)

// restrict applies the ruleset and returns the enforcement level reached:
// read beneath ro, write beneath rw, except beneath hidden (see
// [grantRules]); with noNet, no TCP connect or bind (ABI 4+) and no UDP
// (ABI 10+).
func restrict(ro, rw, hidden []string, noNet bool) (Enforcement, error) {
	for attempt := 1; ; attempt++ {
		abi, rules, err := landlockRules(ro, rw, hidden, nil)
		if err != nil {
			return "", err
		}
		err = landlockConfig(noNet).BestEffort().Restrict(rules...)
		if vanished(err) && attempt < ruleAttempts {
			continue // an enumerated entry went away meanwhile
		}
		if err != nil {
			return "", fmt.Errorf("restrict: %w", err)
		}
		return enforcementAt(abi), nil
	}
}

// ruleAttempts is how often a ruleset is enumerated again when an entry
// it listed vanished before its rule was added (a busy /tmp).
const ruleAttempts = 5

// vanished reports whether err is a rule's path gone missing.
func vanished(err error) bool { return errors.Is(err, os.ErrNotExist) }

// enforcementAt is the enforcement level of the Landlock ABI abi.
func enforcementAt(abi int) Enforcement {
	if abi >= fullABI {
		return EnforcementFull
	}
	return EnforcementPartial
}

// landlockRules returns the kernel's Landlock ABI and the rules that grant
// read beneath ro and write beneath rw except beneath hidden, stamping
// into listed the directories enumerated on the way (see [grantRules]).
func landlockRules(ro, rw, hidden []string, listed *[]dirStamp) (int, []landlock.Rule, error) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0, nil, fmt.Errorf("landlock is not supported by this kernel: %w", err)
	}
	if abi < 1 {
		return 0, nil, fmt.Errorf("landlock is not supported by this kernel (ABI %d)", abi)
	}
	var rules []landlock.Rule
	for _, p := range ro {
		if _, err := os.Stat(p); err != nil {
			return 0, nil, fmt.Errorf("--ro: %w", err)
		}
		rules = grantRules(rules, p, false, hidden, abi, listed)
	}
	for _, p := range rw {
		if _, err := os.Stat(p); err != nil {
			return 0, nil, fmt.Errorf("--rw: %w", err)
		}
		rules = grantRules(rules, p, true, hidden, abi, listed)
	}
	return abi, rules, nil
}

// landlockConfig is what the helper's ruleset handles. V3 handles exactly
// the file rights (read, write, refer, truncate); ioctl on devices and
// unix-socket connects (V5+, V9+) are not file effects and stay
// unrestricted. Landlock also denies ptrace-class access
// (/proc/<pid>/environ, mem, root) to every process outside the new
// domain, the agent included. Without network, every network right the
// kernel handles is denied (no rule grants one).
func landlockConfig(noNet bool) landlock.Config {
	if noNet {
		return landlock.Config{HandledAccessFS: landlock.V3.HandledAccessFS, HandledAccessNet: landlock.V11.HandledAccessNet}
	}
	return landlock.V3
}

// dropCapabilities empties, for the calling thread and so for the command
// it forks, the bounding, ambient and inheritable capability sets: a
// command run as root then starts with no capabilities at all (no mount,
// no unshare, no ptrace, no raw devices). Without CAP_SETPCAP (a non-root
// helper) there is nothing to drop and the bounding set stays.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) {
			break
		}
		if err != nil {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[0].Inheritable == 0 && data[1].Inheritable == 0 {
		return nil
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// runProbe restricts the helper to the read-only policy and verifies that
// it holds: reading works, /dev/null is writable, creating a file in the
// temp dir is refused with EACCES.
func runProbe() int {
	enf, err := restrict([]string{"/"}, []string{"/dev/null"}, nil, false)
	if err != nil {
		return helperFail(err)
	}
	if _, err := os.ReadDir("/"); err != nil {
		return helperFail(fmt.Errorf("probe: read / under restriction: %w", err))
	}
	if err := os.WriteFile("/dev/null", []byte("x"), 0); err != nil {
		return helperFail(fmt.Errorf("probe: write /dev/null under restriction: %w", err))
	}
	f := filepath.Join(os.TempDir(), fmt.Sprintf(".landlock-probe-%d", os.Getpid()))
	fh, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_ = fh.Close()
		_ = os.Remove(f)
		return helperFail(errors.New("probe: restriction is not effective (a write outside the policy succeeded)"))
	}
	if !errors.Is(err, syscall.EACCES) {
		return helperFail(fmt.Errorf("probe: cannot verify the restriction: %w", err))
	}
	if enf == EnforcementFull {
		fmt.Println(probeFull)
	} else {
		fmt.Println(probePartial)
	}
	return 0
}

// runProbeNS checks, as a namespace init, the mounts a real run makes.
func runProbeNS() int {
	if err := enterNamespaces(&helperArgs{}); err != nil {
		return helperFail(err)
	}
	dir := os.TempDir()
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		return helperFail(fmt.Errorf("bind %s: %w", dir, err))
	}
	fmt.Println(probeNS)
	return 0
}
