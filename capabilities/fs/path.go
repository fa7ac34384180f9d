package fs

import (
	"fmt"
	"os"
	"path/filepath"
)

// target is one call's file path.
type target struct {
	// display is the model's path resolved against the session cwd:
	// absolute, "." and ".." collapsed, symbolic links not resolved. It is
	// what results and messages show, and what crosses capabilities.Files.
	display string
	// root is the session root the path is judged against (the cwd,
	// absolute and clean).
	root string
}

// resolve turns the model's path into a target (tools contract § 4,
// Resolution). Whether it stays inside the root, lexically and through
// symbolic links, is decided by the confined capabilities.Files while it
// resolves the path (FS_OUTSIDE_ROOT).
func resolve(cwd, p string) (target, error) {
	base, err := baseDir(cwd)
	if err != nil {
		return target{}, err
	}
	display := p
	if !filepath.IsAbs(display) {
		display = filepath.Join(base, display)
	}
	return target{display: filepath.Clean(display), root: base}, nil
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

// outsideRoot is the Confine refusal.
func outsideRoot(display, root string) error {
	return fsError(CodeOutsideRoot, fmt.Sprintf("refusing to access %s: it resolves outside the session root %s", quote(display), root))
}
