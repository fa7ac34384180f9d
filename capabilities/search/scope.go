package search

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/fs"
)

// scope is one rg run of a search: the directory it runs in (its globs
// are anchored there) and its positional path. An extra root's run names
// the root as its path too, so rg prints absolute paths and searches the
// root even if it could not enter it.
type scope struct {
	dir string // where rg runs
	arg string // positional path ("" = none: rg searches dir and prints paths relative to it)
}

// scopes resolves the call's path argument into the runs of one search.
//
// Without a path the search covers the workspace: the session cwd (paths
// printed relative to it, as always) and then each extra workspace root
// (capabilities.Host.Roots) that does not lie beneath another searched
// root, run in that root and printed as absolute paths. A session without
// extra roots searches its cwd alone, exactly as before.
//
// A path is searched when, symbolic links resolved, it lies beneath the
// cwd or an extra root: from the cwd when it lies there lexically (as
// always), else from the deepest extra root it lies in. Any other path —
// outside every root, or inside one only through a symbolic link that
// leads out — goes to the Gate first (fs.ModeGate: it asks, or refuses
// with FS_OUTSIDE_ROOT) and, allowed, is searched from the cwd; without a
// Gate it is searched as given. The check is the tools' policy, not the
// sandbox's: a confined rg may read anywhere, like bash.
func (o Options) scopes(ctx context.Context, call *capabilities.Call, p string) ([]scope, error) {
	cwd := "."
	if call.Session != nil {
		cwd = call.Session.Cwd()
	}
	base, err := filepath.Abs(cwd)
	if err != nil {
		base = filepath.Clean(cwd)
	}
	var roots []string
	for _, r := range capabilities.HostOf(call.Session).Roots {
		if r = filepath.Clean(r); filepath.IsAbs(r) {
			roots = append(roots, r)
		}
	}
	p = strings.TrimSpace(p)
	if p == "" || p == "." {
		return workspace(cwd, base, roots), nil
	}
	raw := p // as the kernel will see it: ".." after a symbolic link is the link target's parent
	if !filepath.IsAbs(raw) {
		raw = base + string(filepath.Separator) + raw
	}
	display := filepath.Clean(raw)
	if real := kernelPath(raw); real != kernelPath(display) {
		// Cleaning changed what the path names ("lnk/.." is the parent of
		// lnk's target, not the directory holding lnk): judge and search
		// what the kernel resolves, never the lexical stand-in.
		display, p = real, real
	}
	extra := "" // the deepest extra root display lies in lexically
	for _, r := range roots {
		if beneath(display, r) && len(r) > len(extra) {
			extra = r
		}
	}
	switch {
	case !resolvesBeneath(display, append([]string{base}, roots...)):
		if o.Gate != nil {
			judged := base
			if extra != "" && (!beneath(display, base) || len(extra) > len(base)) {
				judged = extra
			}
			if _, err := o.Gate.Check(ctx, fs.Access{Call: call, Op: fs.OpRead, Path: display, Root: judged}); err != nil {
				return nil, err
			}
		}
	case !beneath(display, base) && extra != "":
		// In an extra root: run there, so globs and .gitignore anchor at
		// it; rg prints the absolute paths it is given.
		return []scope{{dir: extra, arg: display}}, nil
	}
	return []scope{{dir: cwd, arg: p}}, nil
}

// workspace is the searches of a call without a path: the cwd, then each
// extra root not beneath another searched one (a root that holds the cwd
// replaces it).
func workspace(cwd, base string, roots []string) []scope {
	if len(roots) == 0 {
		return []scope{{dir: cwd}}
	}
	all := append([]string{base}, roots...)
	var out []scope
	for i, r := range all {
		covered := false
		for j, q := range all {
			if j != i && beneath(r, q) && (r != q || j < i) {
				covered = true
				break
			}
		}
		switch {
		case covered:
		case i == 0:
			out = append(out, scope{dir: cwd})
		default:
			out = append(out, scope{dir: r, arg: r})
		}
	}
	return out
}

// resolvesBeneath reports whether display, once symbolic links are
// resolved, lies beneath one of roots (resolved too). Of a path that does
// not exist, its deepest existing ancestor is resolved (rg then reports the
// path missing).
func resolvesBeneath(display string, roots []string) bool {
	real := kernelPath(display)
	if real == "" {
		return false
	}
	for _, root := range roots {
		if r, err := filepath.EvalSymlinks(root); err == nil && beneath(real, r) {
			return true
		}
	}
	return false
}

// beneath reports whether the clean absolute path p is root or lies below
// it.
func beneath(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// kernelPath resolves the absolute path p the way the kernel does: every
// symbolic link followed where it is met, so a ".." after a link leads to
// the parent of the link's target (filepath.EvalSymlinks walks so, and is
// handed p uncleaned). Of a path that does not fully exist, the longest
// existing prefix is resolved and the rest appended lexically. It returns
// "" when not even the root resolves.
func kernelPath(p string) string {
	sep := string(filepath.Separator)
	comps := strings.Split(p, sep)
	for k := len(comps); k > 0; k-- {
		prefix := strings.Join(comps[:k], sep)
		if prefix == "" {
			prefix = sep
		}
		r, err := filepath.EvalSymlinks(prefix)
		if err != nil {
			continue
		}
		return filepath.Join(append([]string{r}, comps[k:]...)...)
	}
	return ""
}
