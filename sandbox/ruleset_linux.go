//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// A Landlock helper that runs as a subreaper hides secrets by granting
// reads on everything else (see [grantRules]): it lists every directory on
// the way to each hidden path and adds a rule for each entry, a cost paid
// per command that grows with the directories' sizes. The agent builds
// that ruleset once per policy instead, keeps its file descriptor, and
// hands it to each helper it starts ([Landlock.Prepare]); the helper only
// enforces it.
//
// Staleness. A ruleset's rules name inodes as they were when it was built.
// It is reused only while every directory it listed still has the same
// device, inode, modification and change times (an entry created, removed
// or renamed in it changes them), and the set of hidden paths that exist is
// part of the policy's key ([Provider.Confine] resolves it at every call),
// so a secret created after the build is hidden from the next command on.
// A build that saw a directory changed within [racyWindow] of its start
// (the file system's clock is coarse: a change in the same tick would keep
// the times) is used for its command and not kept. A stale ruleset could
// only ever deny: what it does not know is not granted.

// rulesetEnv names, in the environment of a helper started through
// [Confined.Setup], the inherited ruleset: `<fd>,<restrict flags>`. The
// helper removes it before the command starts.
const rulesetEnv = "DSH_SANDBOX_LANDLOCK_RULESET"

// maxRulesets bounds the rulesets a Landlock keeps (one per policy in use:
// a session's roots, mode and network switch); beyond it, new policies
// are built per command.
const maxRulesets = 64

// dirStamp is what a listed directory looked like when a ruleset was
// built.
type dirStamp struct {
	path         string
	dev, ino     uint64
	mtime, ctime int64 // nanoseconds
}

// stampOf stamps the directory p whose stat is fi.
func stampOf(p string, fi os.FileInfo) dirStamp {
	s := dirStamp{path: p}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino = uint64(st.Dev), st.Ino
		s.mtime = st.Mtim.Sec*1e9 + st.Mtim.Nsec
		s.ctime = st.Ctim.Sec*1e9 + st.Ctim.Nsec
	}
	return s
}

// holds reports whether the directory is unchanged.
func (s dirStamp) holds() bool {
	fi, err := os.Stat(s.path)
	return err == nil && fi.IsDir() && stampOf(s.path, fi) == s
}

// cachedRuleset is a built ruleset.
type cachedRuleset struct {
	file     *os.File // closed by its finalizer once no command holds it
	flags    uint32
	listed   []dirStamp
	reusable bool
}

func (r *cachedRuleset) valid() bool {
	for _, s := range r.listed {
		if !s.holds() {
			return false
		}
	}
	return true
}

// coarseNow is the clock the kernel stamps file times with.
func coarseNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts) != nil {
		return time.Now().UnixNano()
	}
	return ts.Nano()
}

// ruleset returns the ruleset of the helper arguments h (as a subreaper),
// cached under key, or nil when it cannot be built (the helper then builds
// its own and reports what went wrong).
func (l *Landlock) ruleset(key string, h helperArgs) *cachedRuleset {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.rulesets[key]; r != nil && r.valid() {
		return r
	}
	delete(l.rulesets, key)
	var start int64
	var listed []dirStamp
	var fd int
	var flags uint32
	for attempt := 1; ; attempt++ {
		start, listed = coarseNow(), nil
		_, rules, err := landlockRules(h.ro, supervisedRW(h.rw, h.tmp), h.hide, &listed)
		if err != nil {
			return nil
		}
		fd, flags, err = landlockConfig(h.noNet).BestEffort().NewRulesetFD(rules...)
		if vanished(err) && attempt < ruleAttempts {
			continue
		}
		if err != nil || fd < 0 {
			return nil
		}
		break
	}
	r := &cachedRuleset{file: os.NewFile(uintptr(fd), "landlock-ruleset"), flags: flags, listed: listed, reusable: true}
	for _, s := range listed {
		if s.mtime >= start-int64(racyWindow) || s.ctime >= start-int64(racyWindow) {
			r.reusable = false
		}
	}
	if r.reusable && len(l.rulesets) < maxRulesets {
		if l.rulesets == nil {
			l.rulesets = map[string]*cachedRuleset{}
		}
		l.rulesets[key] = r
	}
	return r
}

// rulesetSetup returns the Setup that hands a helper outside namespaces
// the prebuilt ruleset of policy, or nil.
func (l *Landlock) rulesetSetup(policy Policy) func(cmd *exec.Cmd) {
	argv := l.Wrap(policy, []string{"true"})
	args := argv[len(l.Launcher) : len(argv)-2] // up to "--"
	h, err := parseHelperArgs(append(args[:len(args):len(args)], "--", "true"))
	if err != nil {
		return nil
	}
	r := l.ruleset(strings.Join(args, "\x00"), h)
	if r == nil {
		return nil
	}
	return func(cmd *exec.Cmd) {
		n := 3 + len(cmd.ExtraFiles)
		cmd.ExtraFiles = append(cmd.ExtraFiles, r.file)
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, rulesetEnv+"="+strconv.Itoa(n)+","+strconv.FormatUint(uint64(r.flags), 10))
	}
}

// inherited is a ruleset handed to the helper.
type inherited struct {
	fd    int
	flags uint32
}

func (r *inherited) close() { _ = unix.Close(r.fd) }

// inheritedRuleset takes the ruleset named by [rulesetEnv], if any: the
// variable is removed and the descriptor, which must be a Landlock
// ruleset, is kept from the command (close-on-exec).
func inheritedRuleset() (*inherited, error) {
	v, ok := os.LookupEnv(rulesetEnv)
	if !ok {
		return nil, nil
	}
	_ = os.Unsetenv(rulesetEnv)
	fdText, flagText, _ := strings.Cut(v, ",")
	fd, err1 := strconv.Atoi(fdText)
	flags, err2 := strconv.ParseUint(flagText, 10, 32)
	if err1 != nil || err2 != nil || fd < 3 {
		return nil, fmt.Errorf("%s: malformed %q", rulesetEnv, v)
	}
	unix.CloseOnExec(fd)
	if link, err := os.Readlink("/proc/self/fd/" + fdText); err != nil || link != "anon_inode:[landlock-ruleset]" {
		return nil, fmt.Errorf("%s: descriptor %d is not a Landlock ruleset (%q, %v)", rulesetEnv, fd, link, err)
	}
	return &inherited{fd: fd, flags: uint32(flags)}, nil
}

// restrictTo enforces an inherited ruleset on every thread of the helper,
// as go-landlock's Restrict does with the rulesets it builds.
func restrictTo(r *inherited) error {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return fmt.Errorf("landlock is not supported by this kernel: %w", err)
	}
	if abi >= 8 {
		flags := r.flags | llsys.FlagRestrictSelfTSync | llsys.FlagRestrictSelfNoNewPrivs
		if abi < 11 {
			// The kernel sets no_new_privs on every thread once the
			// ruleset is enforced; this thread must have it first.
			flags &^= llsys.FlagRestrictSelfNoNewPrivs
			if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
				return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
			}
		}
		err = llsys.LandlockRestrictSelf(r.fd, flags)
	} else {
		if err := llsys.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
		}
		err = llsys.AllThreadsLandlockRestrictSelf(r.fd, r.flags)
	}
	if err != nil {
		return fmt.Errorf("restrict: %w", err)
	}
	r.close()
	r.fd = -1
	return nil
}
