// Package sandbox confines commands to a file-access policy
// (sandbox-approval-modes.md §§ 1–3).
//
// A [Provider] owns a preference chain of [Backend]s (on Linux: bubblewrap,
// then a Landlock helper that is our own binary re-executed), probes them
// functionally once and caches the first usable one. [Provider.Confine]
// turns a caller's argv into the argv to spawn; when no backend is usable it
// fails closed with an [*UnavailableError] so that a command never runs
// unconfined. After the run, [Backend.Classify] maps the exit code and
// stderr to the backend's dialect: a runner failure (the sandbox itself
// broke) outranks a file-access denial.
//
// The upstream contract confines FILE writes only. A policy can ask for
// more (the default composition's containment): [Policy.NoNetwork] cuts
// the command off the network, [Policy.Hidden] makes secrets unreadable and
// [Policy.Protected] keeps files that run code later read-only beneath a
// writable root (where a backend cannot, or the path does not exist yet,
// a [Tripwire] puts them back after the command); the zero values keep
// upstream's argv exactly. Every process a confined command starts lives and dies
// with it: bwrap runs it in its own PID namespace, and the Landlock helper
// either does the same or, where namespaces are unavailable, supervises it
// as a subreaper that kills every descendant when the command ends. Neither
// lets the command see or touch the agent's own process (its environment,
// its root directory). [Policy.TmpDir] gives a session one private /tmp that
// persists across its commands.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Mode is a sandbox mode. The three modes are listed in contract order by
// [Modes].
type Mode string

// The sandbox modes (sandbox-approval-modes.md § 1).
const (
	// ReadOnly makes the whole filesystem read-only; /dev/null stays
	// writable.
	ReadOnly Mode = "read-only"
	// WorkspaceWrite additionally makes the workspace root and /tmp
	// writable.
	WorkspaceWrite Mode = "workspace-write"
	// DangerFullAccess runs the command unwrapped.
	DangerFullAccess Mode = "danger-full-access"
)

// Modes returns the three modes in contract order.
func Modes() []Mode { return []Mode{ReadOnly, WorkspaceWrite, DangerFullAccess} }

// Valid reports whether m is one of the three modes.
func (m Mode) Valid() bool {
	switch m {
	case ReadOnly, WorkspaceWrite, DangerFullAccess:
		return true
	}
	return false
}

// ParseMode returns the mode named s, or an error for any other text.
func ParseMode(s string) (Mode, error) {
	if m := Mode(s); m.Valid() {
		return m, nil
	}
	return "", fmt.Errorf("sandbox: unknown mode %q", s)
}

// Policy is what a confined command may touch.
type Policy struct {
	// Mode is the sandbox mode.
	Mode Mode
	// WorkspaceRoot is the directory made writable under WorkspaceWrite
	// (the process launch cwd in sandbox-acp-agent). It must be absolute.
	WorkspaceRoot string
	// ExtraRoots are further directories made writable under
	// WorkspaceWrite, like WorkspaceRoot (a session's additional workspace
	// roots). Each must be absolute.
	ExtraRoots []string
	// TmpDir, when set, is the session's private temporary directory
	// (absolute, existing, mode 0700). The command sees it as /tmp, with
	// TMPDIR=/tmp, writable under WorkspaceWrite and read-only under
	// ReadOnly, so that files persist across the session's commands and
	// the host's /tmp stays out of reach. The Landlock helper without
	// namespaces cannot remap /tmp: there the command gets TMPDIR=<TmpDir>
	// and write access to TmpDir instead of the host's /tmp, which it only
	// reads. A workspace root beneath /tmp stays visible at its path.
	//
	// Empty keeps each backend's default: bwrap gives every command a
	// fresh empty /tmp under WorkspaceWrite, Landlock the host's /tmp.
	TmpDir string
	// NoNetwork cuts the command off the network: bwrap gives it a network
	// namespace of its own (only its own loopback); the Landlock helper
	// does the same where it runs in namespaces, and denies every TCP
	// connect and bind (ABI 4+) and UDP (ABI 10+) by rule in any case.
	NoNetwork bool
	// Hidden are absolute paths whose contents the command cannot read
	// (secrets): a directory appears empty, a file empty (bwrap, the
	// Landlock helper in namespaces), or reads are not granted beneath them
	// (the Landlock helper as a subreaper). Paths that do not exist are
	// skipped.
	Hidden []string
	// Protected are absolute paths the command cannot change even beneath
	// a writable root (files that run code later: .git/hooks, .git/config,
	// editor settings). bwrap and the Landlock helper in namespaces mount
	// each existing one read-only; the Landlock helper as a subreaper,
	// whose rules cannot take a path back beneath a writable root, guards
	// them with a [Tripwire] instead. A protected path that does not exist
	// (it may be a glob pattern, like .claude/settings*.json) cannot be
	// covered by a mount without leaving its mount point behind: under
	// workspace-write the tripwire removes it if a command creates it.
	Protected []string
	// Quarantine, when set, is a directory (the agent's own, out of the
	// commands' reach) where the tripwire keeps what it replaced or
	// removed.
	Quarantine string
}

// protectionGaps is implemented by backends that leave part of
// Policy.Protected to the [Tripwire]: existing paths that stay writable
// (existing) and missing paths that can be created (missing).
type protectionGaps interface {
	protectionGaps() (existing, missing bool)
}

// Enforcement says how completely a backend enforces a policy.
type Enforcement string

// Enforcement levels reported in result facts.
const (
	// EnforcementFull means every file-write right is enforced.
	EnforcementFull Enforcement = "full"
	// EnforcementPartial means the backend enforces the policy only in part
	// (Landlock on a kernel with an older ABI).
	EnforcementPartial Enforcement = "partial"
)

// Verdict is the classification of a finished confined run.
type Verdict struct {
	// RunnerFailure is set when the sandbox runner itself failed, so the
	// command did not run. It outranks Denied.
	RunnerFailure bool
	// Denied is set when the command hit a file-access denial.
	Denied bool
	// NetDenied is set when a command confined with NoNetwork failed on
	// a connection the sandbox refused.
	NetDenied bool
	// Detail is the first line of the trimmed stderr for a runner failure,
	// or the stderr line that shows the denial.
	Detail string
}

// Backend is one confinement mechanism.
type Backend interface {
	// Name is the backend's short name ("bwrap", "landlock").
	Name() string
	// Probe checks functionally that the backend works on this host and
	// returns its enforcement level; an error means it is unusable.
	Probe(ctx context.Context) (Enforcement, error)
	// Wrap returns the argv that runs argv confined to policy. The policy
	// mode must be ReadOnly or WorkspaceWrite.
	Wrap(policy Policy, argv []string) []string
	// Classify maps a finished run's exit code and collected stderr to a
	// verdict in the backend's dialect (§ 3). A zero or negative exit code
	// (success, or ended by a signal) is never classified.
	Classify(exitCode int, stderr string) Verdict
}

// Confined is the result of [Provider.Confine].
type Confined struct {
	// Argv is the argv to spawn.
	Argv []string
	// Mode is the policy mode the argv was confined to.
	Mode Mode
	// Enforcement is the backend's enforcement level; empty for
	// DangerFullAccess.
	Enforcement Enforcement
	// Backend is the backend that wrapped Argv; nil for DangerFullAccess.
	Backend Backend
	// Setup, when not nil, must be applied to the command that runs Argv
	// before it starts: it asks the kernel for the namespaces the
	// backend's runner works in (the Landlock helper as a PID namespace
	// init). A command started without it is still confined, by the
	// runner's fallback. If the start fails with Setup applied, the caller
	// may retry once without it.
	Setup func(cmd *exec.Cmd)
	// NoNetwork records that the policy cut the command off the network
	// (a failed connection then reads as a network denial).
	NoNetwork bool
	// roDenials marks a run whose containment mounts read-only paths in a
	// backend whose dialect does not name that denial (the Landlock
	// helper in namespaces): `read-only file system` then reads as a
	// denial too.
	roDenials bool
	// bare, when set, records the tripwire of a spawn without Setup (see
	// WithoutSetup).
	bare func() *Tripwire
	// Tripwire, when not nil, guards the protected paths the backend does
	// not enforce; the caller runs its Check once the command has ended
	// (and may while it runs), and reports what it put back as a denial.
	Tripwire *Tripwire
}

// Preparer is implemented by backends whose wrapped argv wants process
// attributes at spawn; [Provider.Confine] stores the result in
// [Confined.Setup]. A nil func means nothing to prepare.
type Preparer interface {
	Prepare(policy Policy) func(cmd *exec.Cmd)
}

// WithoutSetup returns c for a spawn that does not apply Setup (an
// editor's terminal, a start retried without it): the Landlock helper then
// runs as a subreaper, without the mounts that keep protected paths
// read-only, so the tripwire, recorded now, guards every one of them.
// Call it before the spawn.
func (c Confined) WithoutSetup() Confined {
	if c.Setup == nil {
		return c
	}
	c.Setup, c.roDenials = nil, false
	if c.bare != nil {
		c.Tripwire, c.bare = c.bare(), nil
	}
	return c
}

// Classify classifies a finished run of c.Argv; an unconfined run is never
// classified.
func (c Confined) Classify(exitCode int, stderr string) Verdict {
	if c.Backend == nil {
		return Verdict{}
	}
	v := c.Backend.Classify(exitCode, stderr)
	if c.roDenials && !v.Denied && !v.RunnerFailure && exitCode > 0 {
		if line := lineContaining(stderr, "read-only file system"); line != "" {
			v.Denied, v.Detail = true, line
		}
	}
	if c.NoNetwork && !v.RunnerFailure && exitCode > 0 {
		if line := netDenialLine(stderr); line != "" {
			v.NetDenied = true
			if v.Denied && netDenialLine(v.Detail) != "" {
				// Landlock refuses a connect with EACCES, which reads
				// "permission denied" like a file denial.
				v.Denied, v.Detail = false, line
			}
		}
	}
	return v
}

// Facts returns the result facts of a finished run: {mode, denied,
// enforcement} when confined, {mode:"danger-full-access", denied:false}
// otherwise.
func (c Confined) Facts(v Verdict) Facts {
	if c.Backend == nil {
		return Facts{Mode: DangerFullAccess}
	}
	return Facts{Mode: c.Mode, Denied: v.Denied && !v.RunnerFailure, Enforcement: c.Enforcement, RunnerFailed: v.RunnerFailure}
}

// Facts are the sandbox result facts of one bash run (§ 3).
type Facts struct {
	// Mode is the mode the command ran under.
	Mode Mode `json:"mode"`
	// Denied reports a file-access denial.
	Denied bool `json:"denied"`
	// Enforcement is set for confined runs.
	Enforcement Enforcement `json:"enforcement,omitempty"`
	// RunnerFailed is set on a settled background task whose runner failed.
	RunnerFailed bool `json:"runnerFailed,omitempty"`
}

// Marker is the result-text marker of a denied run:
// `[sandbox: file access denied under <mode> mode]`.
func Marker(mode Mode) string {
	return "[sandbox: file access denied under " + string(mode) + " mode]"
}

// NetMarker is the result-text marker of a run that failed on a
// connection the sandbox refused.
func NetMarker(mode Mode) string {
	return "[sandbox: network access denied under " + string(mode) + " mode — the Network option is off]"
}

// ProtectedMarker is the result-text marker of a run whose changes to
// protected paths the [Tripwire] undid: it names them.
func ProtectedMarker(paths []string) string {
	return "[sandbox: protected paths changed by the command were put back: " +
		strings.ReplaceAll(strings.Join(paths, ", "), "\n", " ") +
		" — they run code later (git hooks and config, editor and agent settings, .envrc); the write and edit tools ask the user before changing them]"
}

// netDenials are the stderr texts of a connection refused by a sandbox
// without network: no route (a fresh network namespace), no resolver
// reachable, or Landlock's EACCES on connect, as common tools print them.
var netDenials = []string{
	"network is unreachable", "could not resolve host", "couldn't resolve host", "temporary failure in name resolution",
	"name or service not known", "no address associated with hostname", "unable to resolve host",
	"couldn't connect to server", "failed to connect to", "connection refused", "no route to host",
	"connect: permission denied", "getaddrinfo", "name resolution", "network unreachable",
	"failed to establish a new connection", "could not connect to", "unable to connect", "nodename nor servname",
}

// netDenialLine returns the first line of stderr that reads as a refused
// connection, or "".
func netDenialLine(stderr string) string {
	lower := strings.ToLower(stderr)
	for _, d := range netDenials {
		if strings.Contains(lower, d) {
			return lineContaining(stderr, d)
		}
	}
	return ""
}

// RunnerFailedMarker is the background read marker of a task whose sandbox
// runner failed.
func RunnerFailedMarker(mode Mode) string {
	return "[sandbox: the sandbox runner itself failed under " + string(mode) +
		" mode — the command did not run; this is a sandbox problem, not a command failure]"
}

// UnavailableError is the fail-closed error: the mode asks for confinement
// but no backend is usable, or the runner failed in the foreground. Its
// Error text is the contract's message, verbatim.
type UnavailableError struct {
	// Mode is the requested mode.
	Mode Mode
	// RunnerFailure is the first line of the runner's trimmed stderr when
	// the error reports a runner failure; empty otherwise.
	RunnerFailure string
	// Probes holds why each backend in the chain was unusable (diagnostics
	// only; not part of the message).
	Probes []error
}

// Error returns the contract text, plus ` Runner failure: <line>` when
// RunnerFailure is set.
func (e *UnavailableError) Error() string {
	msg := `sandbox mode "` + string(e.Mode) + `" is requested but no sandbox backend is usable on this host; ` +
		`refusing to run the command unconfined. Install bubblewrap or run a Landlock-enforcing kernel (Linux), ` +
		`ensure sandbox-exec is usable (macOS) — Windows has no confinement backend yet — or switch the consumer ` +
		`to danger-full-access.`
	if e.RunnerFailure != "" {
		msg += " Runner failure: " + e.RunnerFailure
	}
	return msg
}

// Name returns the wire error name, "SandboxUnavailableError".
func (e *UnavailableError) Name() string { return "SandboxUnavailableError" }

// Code returns the wire error code, "SANDBOX_UNAVAILABLE".
func (e *UnavailableError) Code() string { return "SANDBOX_UNAVAILABLE" }

// Unwrap returns the probe errors.
func (e *UnavailableError) Unwrap() []error { return e.Probes }

// RunnerFailureError returns the foreground runner-failure error for mode:
// the contract text followed by ` Runner failure: <first line of trimmed
// stderr>`.
func RunnerFailureError(mode Mode, stderr string) *UnavailableError {
	return &UnavailableError{Mode: mode, RunnerFailure: FirstLine(stderr)}
}

// IsUnavailable reports whether err is or wraps an [*UnavailableError].
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

// FirstLine returns the first line of the trimmed text.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimRight(line, "\r")
}

// classify implements the shared part of § 3: runner failure first, then
// denial, each a case-insensitive substring of stderr.
func classify(exitCode int, stderr string, runner, denial []string) Verdict {
	if exitCode <= 0 {
		return Verdict{}
	}
	lower := strings.ToLower(stderr)
	for _, r := range runner {
		if strings.Contains(lower, strings.ToLower(r)) {
			return Verdict{RunnerFailure: true, Detail: FirstLine(stderr)}
		}
	}
	for _, d := range denial {
		d = strings.ToLower(d)
		if strings.Contains(lower, d) {
			return Verdict{Denied: true, Detail: lineContaining(stderr, d)}
		}
	}
	return Verdict{}
}

// lineContaining returns the first line of s whose lower-cased text
// contains the lower-case needle.
func lineContaining(s, needle string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(strings.ToLower(line), needle) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// ExecLine returns the shell text `exec <argv each single-quoted>` that the
// executor passes to `bash -c` (§ 2): each element is wrapped in single
// quotes with every single quote replaced by quote, backslash, quote,
// quote (the shell idiom that closes, escapes and reopens), elements joined
// by one space.
func ExecLine(argv []string) string {
	var b strings.Builder
	b.WriteString("exec")
	for _, a := range argv {
		b.WriteString(" '")
		b.WriteString(strings.ReplaceAll(a, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}
