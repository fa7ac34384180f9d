//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// roDirRights are the rights `--ro DIR` grants.
const roDirRights = landlock.AccessFSSet(llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir)

// listRights are what an ancestor of a hidden path keeps for itself: its
// entries can be listed and run, but no file beneath it can be read or
// changed through its rule (the rule of a directory covers its whole
// tree).
const listRights = landlock.AccessFSSet(llsys.AccessFSExecute | llsys.AccessFSReadDir)

// grantRules appends the rules that grant p (read, or read and write with
// rw) minus every hidden path beneath it. Landlock only allows, and a rule
// covers a whole tree, so a directory with a hidden path beneath it is
// granted only listRights, and each of its entries is granted in turn
// (recursively where a hidden path lies deeper), except the hidden ones
// and symlinks that lead into one. Entries created after the restriction
// in such a directory are not readable (docs/security.md). Each directory
// so listed is stamped into listed, when not nil, as it was before it was
// read (a cached ruleset is valid while every stamp still holds).
func grantRules(rules []landlock.Rule, p string, rw bool, hidden []string, abi int, listed *[]dirStamp) []landlock.Rule {
	if slices.ContainsFunc(hidden, func(h string) bool { return beneath(p, h) }) {
		return rules // p is hidden, or lies beneath a hidden path
	}
	st, err := os.Stat(p)
	if err != nil {
		return rules // gone since it was listed
	}
	if !st.IsDir() {
		if rw {
			return append(rules, landlock.RWFiles(p))
		}
		return append(rules, landlock.ROFiles(p))
	}
	if !slices.ContainsFunc(hidden, func(h string) bool { return beneath(h, p) }) {
		return append(rules, dirRule(p, rw, abi))
	}
	rules = append(rules, landlock.PathAccess(listRights, p))
	if listed != nil {
		*listed = append(*listed, stampOf(p, st))
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return rules
	}
	for _, e := range ents {
		c := filepath.Join(p, e.Name())
		if e.Type()&os.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(c)
			if err != nil || slices.ContainsFunc(hidden, func(h string) bool { return beneath(real, h) || beneath(h, real) }) {
				continue // dangling, or a way into a hidden tree
			}
		}
		rules = grantRules(rules, c, rw, hidden, abi, listed)
	}
	return rules
}

// dirRule grants a whole directory tree.
func dirRule(p string, rw bool, abi int) landlock.Rule {
	switch {
	case !rw:
		return landlock.PathAccess(roDirRights, p)
	case abi >= 2:
		// Moves and links inside writable trees need "refer"; asking for
		// it on a V1 kernel would make BestEffort enforce nothing.
		return landlock.PathAccess(rwDirRights, p).WithRefer()
	default:
		return landlock.PathAccess(rwDirRights, p)
	}
}

// containMounts applies the containment as the init of a fresh mount
// namespace: each protected path is bound read-only onto itself, then each
// hidden directory gets an empty read-only tmpfs and each hidden file
// /dev/null, read-only. A path that does not exist in the namespace (one
// beneath a replaced /tmp) is skipped.
func containMounts(protect, hide []string) error {
	for _, p := range protect {
		if err := bindReadOnly(p, p); err != nil {
			return err
		}
	}
	for _, p := range hide {
		st, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
		if !st.IsDir() {
			if err := bindReadOnly("/dev/null", p); err != nil {
				return err
			}
			continue
		}
		if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0700"); err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
	}
	return nil
}

// bindReadOnly binds src at dst and makes that mount read-only.
func bindReadOnly(src, dst string) error {
	if _, err := os.Stat(dst); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", src, dst, err)
	}
	// A remount in a user namespace must keep the flags the mount was
	// locked with.
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV)
	var fs unix.Statfs_t
	if unix.Statfs(dst, &fs) == nil {
		for st, ms := range map[int64]uintptr{unix.ST_NOEXEC: unix.MS_NOEXEC, unix.ST_NOATIME: unix.MS_NOATIME,
			unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME} {
			if fs.Flags&st != 0 {
				flags |= ms
			}
		}
	}
	if err := unix.Mount("", dst, "", flags, ""); err != nil {
		return fmt.Errorf("make %s read-only: %w", dst, err)
	}
	return nil
}
