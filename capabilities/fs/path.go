package fs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// target is a resolved file path.
type target struct {
	// display is the model's path resolved against the session cwd:
	// absolute, "." and ".." collapsed, symbolic links not resolved. It is
	// what results and messages show.
	display string
	// key is the file's identity: the real path of the deepest existing
	// ancestor joined with the missing tail. The policy is keyed by it and
	// I/O goes through it.
	key string
}

// resolve turns the model's path into a target (tools contract § 4,
// Resolution). With confine set, the target must lie inside the cwd both
// lexically (the cleaned path is under the cwd as given or under its real
// path, so ".." cannot climb out) and by real path (so no symbolic link
// leads out).
func resolve(cwd, p string, confine bool) (target, error) {
	base, err := baseDir(cwd)
	if err != nil {
		return target{}, err
	}
	display := p
	if !filepath.IsAbs(display) {
		display = filepath.Join(base, display)
	}
	display = filepath.Clean(display)
	realBase := ""
	if confine {
		if realBase, err = filepath.EvalSymlinks(base); err != nil {
			return target{}, fmt.Errorf("cannot resolve the session root %s: %w", base, err)
		}
		if !within(display, base) && !within(display, realBase) {
			return target{}, outsideRoot(display, base)
		}
	}
	key, err := realKey(display)
	if err != nil {
		return target{}, err
	}
	if confine && !within(key, realBase) {
		return target{}, outsideRoot(display, base)
	}
	return target{display: display, key: key}, nil
}

// baseDir is the absolute, cleaned session cwd (the process cwd when the
// session has none).
func baseDir(cwd string) (string, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("cannot determine the working directory: %w", err)
		}
		return wd, nil
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", fmt.Errorf("cannot resolve the working directory %s: %w", cwd, err)
	}
	return abs, nil
}

// realKey resolves symbolic links in display: the real path of the file
// itself, or of its nearest existing ancestor plus the not-yet-existing
// suffix.
func realKey(display string) (string, error) {
	real, err := filepath.EvalSymlinks(display)
	if err == nil {
		return real, nil
	}
	if err := classify(display, err); err != nil {
		return "", err
	}
	missing := []string{filepath.Base(display)}
	ancestor := filepath.Dir(display)
	for {
		real, err := filepath.EvalSymlinks(ancestor)
		if err == nil {
			return filepath.Join(append([]string{real}, missing...)...), nil
		}
		if err := classify(display, err); err != nil {
			return "", err
		}
		parent := filepath.Dir(ancestor)
		if parent == ancestor {
			return display, nil
		}
		missing = append([]string{filepath.Base(ancestor)}, missing...)
		ancestor = parent
	}
}

// classify maps a symlink-resolution failure: nil for "missing" (keep
// walking up), FS_NOT_FOUND when a path segment is a file, else a plain
// error.
func classify(display string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return fsError(CodeNotFound, "cannot resolve "+quote(display)+": a parent path segment is not a directory")
	case errors.Is(err, fs.ErrNotExist):
		return nil
	default:
		return ioError("resolve", display, err)
	}
}

// within reports whether p is root or lies beneath it (both clean and
// absolute).
func within(p, root string) bool {
	if p == root || root == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

// outsideRoot is the Confine refusal.
func outsideRoot(display, root string) error {
	return fsError(CodeOutsideRoot, fmt.Sprintf("refusing to access %s: it resolves outside the session root %s", quote(display), root))
}
