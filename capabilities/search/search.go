// Package search holds the glob and grep tools: fixed ripgrep argv
// templates run through the session's confined process path (the same
// sandbox.Provider.Confine the bash tool and hooks use), never through a
// shell. grep parses `rg --json`; both bound what they return and say
// what they cut. A search covers the session's workspace (its cwd and its
// extra roots, capabilities.Host.Roots); a path outside every root goes to
// the Gate, as a read there would.
package search

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/bash"
	"github.com/dsh-acp/dsh-acp/capabilities/fs"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// Defaults of the bounds (Options zero fields).
const (
	// DefaultMaxResults caps the matches grep returns and the paths glob
	// returns.
	DefaultMaxResults = 200
	// DefaultPerFile caps the matches grep returns per file.
	DefaultPerFile = 50
	// DefaultMaxLine caps the characters of one matched line.
	DefaultMaxLine = 300
	// DefaultTimeout is a search's time budget.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxFileSize is the size above which files are not searched
	// (ripgrep's --max-filesize), so one huge file cannot eat the budget.
	DefaultMaxFileSize = "64M"
	// MaxTimeout caps a per-call timeoutMs.
	MaxTimeout = 10 * time.Minute
)

// Confiner wraps an argv so it runs confined (sandbox.Provider).
type Confiner interface {
	Confine(ctx context.Context, argv []string, p sandbox.Policy) (sandbox.Confined, error)
}

// Sandboxing confines every search like a bash command: the session's
// sandbox mode beneath its workspace root.
type Sandboxing struct {
	// Confiner wraps the argv for the chosen backend.
	Confiner Confiner
	// Mode returns the session's effective sandbox mode.
	Mode func(call *capabilities.Call) string
	// Root returns the writable workspace root for a call.
	Root func(call *capabilities.Call) string
	// Hidden, when set, returns the paths a call's search cannot read
	// (sandbox.Policy.Hidden); ripgrep then also runs without network.
	Hidden func(call *capabilities.Call) []string
}

// Options configure the search tools. Zero fields take the defaults.
type Options struct {
	// Sandbox confines every run (nil: rg runs unconfined).
	Sandbox *Sandboxing
	// Gate decides on a path outside every workspace root, as for the
	// read tool (fs.ModeGate: the session's sandbox mode, asking the
	// user); nil: any path is searched as given.
	Gate fs.Gate
	// RG is the ripgrep binary: a path, or a name looked up in PATH
	// (default "rg").
	RG string
	// MaxResults caps returned matches (grep) and paths (glob).
	MaxResults int
	// PerFile caps grep's matches per file.
	PerFile int
	// MaxLine caps the characters kept of one matched line.
	MaxLine int
	// Timeout is the default time budget of one search; a call's
	// timeoutMs may ask for another, capped by MaxTimeout.
	Timeout time.Duration
	// MaxTimeout caps a call's timeoutMs (default MaxTimeout).
	MaxTimeout time.Duration
	// MaxFileSize is ripgrep's --max-filesize (default DefaultMaxFileSize).
	MaxFileSize string
	// Env decides which of the agent's variables reach rg, as for bash
	// commands (zero: the default rule, secret-looking names dropped).
	Env bash.EnvPolicy
}

func (o Options) withDefaults() Options {
	if o.RG == "" {
		o.RG = "rg"
	}
	if o.MaxResults <= 0 {
		o.MaxResults = DefaultMaxResults
	}
	if o.PerFile <= 0 {
		o.PerFile = DefaultPerFile
	}
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = MaxTimeout
	}
	if o.MaxFileSize == "" {
		o.MaxFileSize = DefaultMaxFileSize
	}
	return o
}

// New returns the glob and grep tools.
func New(o Options) []capabilities.Tool {
	o = o.withDefaults()
	return []capabilities.Tool{&Glob{opts: o}, &Grep{opts: o}}
}

// ErrNoRipgrep is returned when the rg binary cannot be found.
var ErrNoRipgrep = errors.New("ripgrep (rg) is not installed or not in PATH; install the ripgrep package " +
	"(Debian/Ubuntu: apt install ripgrep) — until then search with bash")

// rgPath resolves the ripgrep binary to an absolute path, so the confined
// argv names exactly what runs.
func (o Options) rgPath() (string, error) {
	p, err := exec.LookPath(o.RG)
	if err != nil {
		return "", fmt.Errorf("%w (%v)", ErrNoRipgrep, err)
	}
	return filepath.Abs(p)
}

// prepare is what both searches check and resolve before running: the
// call's time budget, the ripgrep binary, and the scopes its path names.
func (o Options) prepare(ctx context.Context, call *capabilities.Call, timeoutMs *float64, path string) (budget time.Duration, rg string, scopes []scope, err error) {
	if budget, err = o.budget(timeoutMs); err != nil {
		return 0, "", nil, err
	}
	if rg, err = o.rgPath(); err != nil {
		return 0, "", nil, err
	}
	if scopes, err = o.scopes(ctx, call, path); err != nil {
		return 0, "", nil, err
	}
	return budget, rg, scopes, nil
}

// budget is the call's time budget: timeoutMs if given (capped), else the
// default.
func (o Options) budget(ms *float64) (time.Duration, error) {
	if ms == nil {
		return o.Timeout, nil
	}
	if *ms <= 0 {
		return 0, fmt.Errorf("invalid timeoutMs: expected a positive number, got %v", *ms)
	}
	d := time.Duration(*ms * float64(time.Millisecond))
	return min(d, o.MaxTimeout), nil
}

// selectFiles is the fixed argv fragment that limits a search to files
// matching glob. ripgrep's --glob overrides .gitignore, so a pattern
// without a slash (a basename glob, matched at any depth) goes through a
// file type instead, which keeps ignored files out; a pattern with a
// slash needs --glob and so may list ignored files it names.
func selectFiles(glob string) []string {
	if strings.Contains(glob, "/") {
		return []string{"--glob", glob}
	}
	return []string{"--type-add", "dshsel:" + glob, "--type", "dshsel"}
}
