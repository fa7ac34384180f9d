package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
)

// Provider selects a backend from a preference chain once and caches the
// choice (§ 2). Its zero value has an empty chain and therefore always
// reports unavailability; build one with [NewProvider] or
// [NewDefaultProvider]. A Provider is safe for concurrent use.
type Provider struct {
	chain []Backend

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

// DefaultChain returns the platform's preference chain: on Linux
// [bwrap, landlock] with the Landlock helper started by launcher (see
// [HelperLauncher]); elsewhere an empty chain (darwin's seatbelt backend is
// not built).
func DefaultChain(launcher []string) []Backend {
	if runtime.GOOS != "linux" {
		return nil
	}
	return []Backend{&Bwrap{}, &Landlock{Launcher: launcher}}
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
// once; a path beneath another is kept as well (Protected under Hidden
// differ), ordered as given.
func existing(ps []string) []string {
	var out []string
	for _, p := range ps {
		if !filepath.IsAbs(p) {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if !slices.Contains(out, real) {
			out = append(out, real)
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
	policy.Hidden, policy.Protected = existing(policy.Hidden), existing(policy.Protected)
	b, enf, err := p.Select(ctx, policy.Mode)
	if err != nil {
		return Confined{}, err
	}
	c := Confined{Argv: b.Wrap(policy, argv), Mode: policy.Mode, Enforcement: enf, Backend: b, NoNetwork: policy.NoNetwork}
	if pr, ok := b.(Preparer); ok {
		c.Setup = pr.Prepare(policy)
	}
	return c, nil
}
