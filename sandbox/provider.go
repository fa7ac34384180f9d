package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Provider selects a backend from a preference chain once and caches the
// choice (§ 2). Its zero value has an empty chain and therefore always
// reports unavailability; build one with [NewProvider] or
// [NewDefaultProvider]. A Provider is safe for concurrent use.
type Provider struct {
	chain []Backend

	recorded recordings // the tripwires' file contents, by stamp

	mu        sync.Mutex
	done      bool
	backend   Backend
	enf       Enforcement
	probeErrs []error
}

// NewProvider returns a provider over chain, probed in order on first use.
// An empty chain makes every confined mode unavailable.
func NewProvider(chain ...Backend) *Provider {
	return &Provider{chain: slices.Clone(chain)}
}

// DefaultChain returns this system's preference chain (see [ChainFor])
// with the Landlock helper started by launcher (see [HelperLauncher]).
func DefaultChain(launcher []string) []Backend { return ChainFor(runtime.GOOS, launcher, false) }

// ChainFor returns the preference chain of the system goos (§ 2): on
// Linux [bwrap, landlock], on darwin [seatbelt] (in the contract's exact
// form when contract is set, for the upstream compositions), elsewhere
// (Windows) an empty chain, so that every confined mode fails closed.
func ChainFor(goos string, launcher []string, contract bool) []Backend {
	switch goos {
	case "linux":
		return []Backend{&Bwrap{}, &Landlock{Launcher: launcher}}
	case "darwin":
		return []Backend{&Seatbelt{Contract: contract}}
	}
	return nil
}

// NewDefaultProvider returns a provider over [DefaultChain] whose Landlock
// launcher is the running executable re-executed with [HelperArg]; the
// executable must call [MaybeRunHelper] first thing in main.
func NewDefaultProvider() (*Provider, error) {
	launcher, err := HelperLauncher()
	if err != nil {
		return nil, err
	}
	return NewProvider(DefaultChain(launcher)...), nil
}

// NewUpstreamProvider is [NewDefaultProvider] for the upstream
// compositions: where a backend's argv goes beyond the contract's on this
// system (Seatbelt's), it produces the contract's exactly.
func NewUpstreamProvider() (*Provider, error) {
	launcher, err := HelperLauncher()
	if err != nil {
		return nil, err
	}
	return NewProvider(ChainFor(runtime.GOOS, launcher, true)...), nil
}

// HelperLauncher returns the launcher argv prefix that re-executes the
// running binary as the Landlock helper: [<os.Executable()>, HelperArg].
func HelperLauncher() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: locate own executable for the landlock helper: %w", err)
	}
	return []string{exe, HelperArg}, nil
}

// Chain returns a copy of the provider's preference chain.
func (p *Provider) Chain() []Backend { return slices.Clone(p.chain) }

// Select returns the first usable backend of the chain and its enforcement,
// probing on the first call and caching the outcome (success or
// unavailability) for the provider's lifetime. If ctx ends while probing,
// the context error is returned and nothing is cached. The mode only shapes
// the unavailability error.
func (p *Provider) Select(ctx context.Context, mode Mode) (Backend, Enforcement, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		var errs []error
		var chosen Backend
		var enf Enforcement
		for _, b := range p.chain {
			e, err := b.Probe(ctx)
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, "", fmt.Errorf("sandbox: probing %s: %w", b.Name(), ctxErr)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", b.Name(), err))
				continue
			}
			chosen, enf = b, e
			break
		}
		p.done, p.backend, p.enf, p.probeErrs = true, chosen, enf, errs
	}
	if p.backend == nil {
		return nil, "", &UnavailableError{Mode: mode, Probes: slices.Clone(p.probeErrs)}
	}
	return p.backend, p.enf, nil
}

// existing returns the absolute paths of ps that exist, cleaned, with
// their symlinks resolved (a mount or a rule lands on the real file), each
// once, a glob pattern standing for its matches; a path beneath another is kept as well (Protected under Hidden
// differ), ordered as given.
func existing(ps []string) []string {
	var out []string
	dirs := map[string]string{} // a parent directory's resolution, this call's
	for _, p := range ps {
		if !filepath.IsAbs(p) {
			continue
		}
		ms := []string{p}
		if isPattern(p) {
			ms, _ = filepath.Glob(p) // a protected pattern
		}
		for _, m := range ms {
			real, err := resolve(m, dirs)
			if err != nil {
				continue
			}
			if !slices.Contains(out, real) {
				out = append(out, real)
			}
		}
	}
	return out
}

// resolve is [filepath.EvalSymlinks] of p, with the resolution of p's
// parent directory looked up in (or added to) dirs, itself so resolved:
// the paths of a policy share a few parents (the home, a repository's
// .git), each resolved once per [Provider.Confine] rather than once per
// path. p's own name is checked (one lstat): a symbolic link there is
// resolved in full.
func resolve(p string, dirs map[string]string) (string, error) {
	if p != filepath.Clean(p) || p == "/" {
		return filepath.EvalSymlinks(p) // ".." and the like: EvalSymlinks's own rules
	}
	dir := filepath.Dir(p)
	realDir, ok := dirs[dir]
	if !ok {
		var err error
		if realDir, err = resolve(dir, dirs); err != nil {
			return "", err
		}
		dirs[dir] = realDir
	}
	real := filepath.Join(realDir, filepath.Base(p))
	fi, err := os.Lstat(real)
	if err != nil {
		return "", err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return filepath.EvalSymlinks(real)
	}
	return real, nil
}

// isPattern reports whether p holds what [filepath.Glob] reads as
// pattern syntax: `*`, `?`, `[`, and except on Windows (where it
// separates) the escaping backslash. Such a policy path stands for its
// matches, any other for itself.
func isPattern(p string) bool {
	meta := `*?[\`
	if runtime.GOOS == "windows" {
		meta = `*?[`
	}
	return strings.ContainsAny(p, meta)
}

// absentPaths returns the absolute paths (or glob patterns) of ps that
// exist nowhere, cleaned, each once.
func absentPaths(ps []string) []string {
	var out []string
	for _, p := range ps {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if isPattern(p) {
			if ms, _ := filepath.Glob(p); len(ms) > 0 {
				continue
			}
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Confine returns the argv that runs argv under policy. DangerFullAccess
// returns argv unchanged without touching the provider. For the confined
// modes the cached backend wraps argv; when no backend is usable the error
// is an [*UnavailableError] and nothing may be spawned.
func (p *Provider) Confine(ctx context.Context, argv []string, policy Policy) (Confined, error) {
	if len(argv) == 0 {
		return Confined{}, errors.New("sandbox: confine: empty argv")
	}
	// An extra root that no longer exists (a folder removed since the
	// session was opened) gets no rule: bwrap refuses to bind a missing
	// source and Landlock to open one, which would fail every command of
	// the session.
	policy.ExtraRoots = slices.DeleteFunc(slices.Clone(policy.ExtraRoots), func(r string) bool {
		fi, err := os.Stat(r)
		return err != nil || !fi.IsDir()
	})
	switch policy.Mode {
	case DangerFullAccess:
		return Confined{Argv: slices.Clone(argv), Mode: DangerFullAccess}, nil
	case ReadOnly:
	case WorkspaceWrite:
		if policy.WorkspaceRoot == "" || !filepath.IsAbs(policy.WorkspaceRoot) {
			return Confined{}, fmt.Errorf("sandbox: confine: workspace root %q must be an absolute path", policy.WorkspaceRoot)
		}
		policy.WorkspaceRoot = filepath.Clean(policy.WorkspaceRoot)
		roots := make([]string, len(policy.ExtraRoots))
		for i, r := range policy.ExtraRoots {
			if !filepath.IsAbs(r) {
				return Confined{}, fmt.Errorf("sandbox: confine: extra root %q must be an absolute path", r)
			}
			roots[i] = filepath.Clean(r)
		}
		policy.ExtraRoots = roots
	default:
		return Confined{}, fmt.Errorf("sandbox: confine: unknown mode %q", policy.Mode)
	}
	if policy.TmpDir != "" {
		if !filepath.IsAbs(policy.TmpDir) {
			return Confined{}, fmt.Errorf("sandbox: confine: temp dir %q must be an absolute path", policy.TmpDir)
		}
		policy.TmpDir = filepath.Clean(policy.TmpDir)
	}
	b, enf, err := p.Select(ctx, policy.Mode)
	if err != nil {
		return Confined{}, err
	}
	missing := absentPaths(policy.Protected)
	policy.Hidden, policy.Protected = existing(policy.Hidden), existing(policy.Protected)
	c := Confined{Argv: b.Wrap(policy, argv), Mode: policy.Mode, Enforcement: enf, Backend: b, NoNetwork: policy.NoNetwork}
	if pr, ok := b.(Preparer); ok {
		c.Setup = pr.Prepare(policy)
	}
	if m, ok := b.(interface{ mountsReadOnly() bool }); ok && m.mountsReadOnly() {
		c.roDenials = len(policy.Hidden)+len(policy.Protected) > 0
	}
	if g, ok := b.(protectionGaps); ok && policy.Mode == WorkspaceWrite {
		var guard []string
		gapExisting, gapMissing := g.protectionGaps()
		if gapExisting {
			guard = policy.Protected
		}
		if !gapMissing {
			missing = nil
		}
		var roots []string
		for _, r := range append([]string{policy.WorkspaceRoot}, policy.ExtraRoots...) {
			roots = append(roots, r)
			if real, err := filepath.EvalSymlinks(r); err == nil && real != r {
				roots = append(roots, real) // where the resolved protected paths lie
			}
		}
		c.Tripwire = newTripwire(&p.recorded, roots, guard, missing, policy.Quarantine)
		if !gapExisting && c.Setup != nil && len(policy.Protected) > 0 {
			// Without its setup the helper supervises as a subreaper.
			protected, quarantine := policy.Protected, policy.Quarantine
			c.bare = func() *Tripwire { return newTripwire(&p.recorded, roots, protected, missing, quarantine) }
		}
	}
	return c, nil
}
