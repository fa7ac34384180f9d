package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
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

// targetOf resolves the model's path for call (see resolve) and judges it
// beneath the workspace root it lies in lexically: the deepest of the
// session cwd and the session's extra roots (capabilities.Host.Roots),
// else the cwd (where confinement then refuses it).
func targetOf(call *capabilities.Call, p string) (target, error) {
	tg, err := resolve(cwdOf(call), p)
	if err != nil {
		return target{}, err
	}
	best := ""
	if beneath(tg.display, tg.root) {
		best = tg.root
	}
	for _, r := range capabilities.HostOf(call.Session).Roots {
		if r = filepath.Clean(r); filepath.IsAbs(r) && beneath(tg.display, r) && len(r) > len(best) {
			best = r
		}
	}
	if best != "" {
		tg.root = best
	}
	return tg, nil
}

// beneath reports whether the clean absolute path p is root or lies below
// it.
func beneath(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
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
