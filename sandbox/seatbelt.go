package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SeatbeltPath is macOS's sandbox-exec, always run by this absolute path:
// a sandbox-exec found on PATH could be anything the repository put there.
const SeatbeltPath = "/usr/bin/sandbox-exec"

// envPath is the env(1) that sets TMPDIR for a command confined with a
// session temp dir (absolute for the same reason).
const envPath = "/usr/bin/env"

// Seatbelt is the macOS backend: the command runs under sandbox-exec with
// a profile generated from the policy (sandbox-approval-modes.md § 2). It
// is the darwin chain's sole candidate and is selected without probing; a
// sandbox-exec that is missing or refuses the profile fails closed at
// execution through its runner-failure signature (§ 3).
//
// Two forms exist. With Contract set (the upstream compositions) Wrap
// produces the contract's argv and profile exactly: `sandbox-exec -p
// <profile> -- argv`, the profile's forms joined by one space, the
// workspace-write subpaths spliced in as quoted strings over the distinct
// real paths of the root, /tmp and the OS temp dir. Without it (the
// default composition) every workspace root is writable, every path is
// canonicalized before it enters the profile (macOS resolves /tmp to
// /private/tmp and /var to /private/var before Seatbelt matches), and the
// paths travel as `-D NAME=value` parameters that the profile reads with
// (param "NAME"), so no path text is ever parsed as profile text. A
// session temp dir (Policy.TmpDir) replaces the host's /tmp and temp dir
// in the writable set and is passed to the command as TMPDIR (Seatbelt
// cannot remap /tmp; the host's /tmp stays readable).
//
// The profile is built by [Seatbelt.Profile] from the same Policy the other
// backends read: in the default form Policy.Protected paths stay
// read-only beneath a writable root, Policy.Hidden paths are neither
// readable nor writable, and Policy.NoNetwork leaves the command only
// loopback and local sockets.
type Seatbelt struct {
	// Path is argv[0]; empty means [SeatbeltPath].
	Path string
	// Contract selects the contract's exact form (see the type's doc).
	Contract bool
	// TempDir returns the OS temp dir; nil means os.TempDir.
	TempDir func() string
	// Realpath resolves symbolic links; nil means filepath.EvalSymlinks.
	// When it fails the cleaned path is used as it is.
	Realpath func(string) (string, error)
}

// Name returns "seatbelt".
func (*Seatbelt) Name() string { return "seatbelt" }

func (s *Seatbelt) path() string {
	if s.Path == "" {
		return SeatbeltPath
	}
	return s.Path
}

// Probe selects Seatbelt without running anything (§ 2: a sole candidate
// is selected unprobed); its enforcement is full.
func (*Seatbelt) Probe(context.Context) (Enforcement, error) { return EnforcementFull, nil }

// Classify classifies in the seatbelt dialect: runner failure on
// `sandbox-exec: `, denial on `operation not permitted`.
func (*Seatbelt) Classify(exitCode int, stderr string) Verdict {
	return classify(exitCode, stderr, []string{"sandbox-exec: "}, []string{"operation not permitted"})
}

// Wrap returns `<sandbox-exec> [-D NAME=value…] -p <profile> --` argv,
// with `/usr/bin/env TMPDIR=<TmpDir>` before argv when the policy has a
// session temp dir (default form only).
func (s *Seatbelt) Wrap(policy Policy, argv []string) []string {
	profile, params := s.Profile(policy)
	out := []string{s.path()}
	for _, p := range params {
		out = append(out, "-D", p.Name+"="+p.Value)
	}
	out = append(out, "-p", profile, "--")
	if !s.Contract && policy.TmpDir != "" {
		out = append(out, envPath, "TMPDIR="+s.real(policy.TmpDir))
	}
	return append(out, argv...)
}

// SeatbeltParam is one `-D NAME=value` parameter of a profile.
type SeatbeltParam struct {
	Name, Value string
}

// Profile returns the Seatbelt profile for policy and the parameters it
// reads (none in the contract form).
func (s *Seatbelt) Profile(policy Policy) (string, []SeatbeltParam) {
	forms := []string{
		"(version 1)",
		"(allow default)",
		"(deny file-write*)",
		`(allow file-write* (literal "/dev/null"))`,
	}
	if s.Contract {
		if policy.Mode == WorkspaceWrite {
			forms = append(forms, "(allow file-write*"+s.subpaths(s.contractRoots(policy))+")")
		}
		return strings.Join(forms, " "), nil
	}
	// What any command writes to that is not a file: its own streams and
	// terminal, and the helper dtrace opens in every process.
	forms = append(forms, `(allow file-write* (literal "/dev/stdout") (literal "/dev/stderr") (literal "/dev/tty") `+
		`(literal "/dev/dtracehelper") (subpath "/dev/fd"))`)
	var params []SeatbeltParam
	if policy.Mode == WorkspaceWrite {
		var b strings.Builder
		b.WriteString("(allow file-write*")
		for i, r := range s.writableRoots(policy) {
			p := SeatbeltParam{Name: "WRITABLE_ROOT_" + strconv.Itoa(i), Value: r}
			params = append(params, p)
			b.WriteString(` (subpath (param "` + p.Name + `"))`)
		}
		b.WriteString(")")
		forms = append(forms, b.String())
	}
	// The default composition's containment (Policy.NoNetwork, Hidden,
	// Protected), after the allows: Seatbelt's last matching rule wins.
	// Paths that do not exist yet keep their rule (a secret created later
	// stays hidden).
	addDeny := func(prefix, op string, paths []string) {
		for i, p := range paths {
			param := SeatbeltParam{Name: prefix + strconv.Itoa(i), Value: s.real(p)}
			params = append(params, param)
			forms = append(forms, "(deny "+op+` (subpath (param "`+param.Name+`")))`)
		}
	}
	addDeny("PROTECTED_", "file-write*", policy.Protected)
	addDeny("HIDDEN_", "file-read* file-write*", policy.Hidden)
	if policy.NoNetwork {
		// Local unix sockets only. Unlike a Linux network namespace,
		// which gives the command a loopback of its own, the Mac's
		// loopback is the host's: its services (databases, dev servers)
		// would be reachable, so loopback is denied too.
		forms = append(forms, "(deny network*)", "(allow network* (remote unix-socket))")
	}
	return strings.Join(forms, "\n") + "\n", params
}

// contractRoots are the contract's writable roots: the distinct real
// paths of the root (and the extra roots), /tmp and the OS temp dir.
func (s *Seatbelt) contractRoots(policy Policy) []string {
	var roots []string
	for _, r := range append(append([]string{policy.WorkspaceRoot}, policy.ExtraRoots...), "/tmp", s.tempDir()) {
		if r == "" {
			continue
		}
		if real := s.real(r); !slices.Contains(roots, real) {
			roots = append(roots, real)
		}
	}
	return roots
}

// writableRoots are the default form's writable roots, canonical and
// distinct: every workspace root, then the session temp dir when there is
// one, else /tmp and the OS temp dir. A root inside another is dropped
// (the outer subpath covers it).
func (s *Seatbelt) writableRoots(policy Policy) []string {
	cands := append([]string{policy.WorkspaceRoot}, policy.ExtraRoots...)
	if policy.TmpDir != "" {
		cands = append(cands, policy.TmpDir)
	} else {
		cands = append(cands, "/tmp", s.tempDir())
	}
	var roots []string
	for _, r := range cands {
		if r == "" {
			continue
		}
		real := s.real(r)
		if slices.ContainsFunc(roots, func(have string) bool { return beneath(real, have) }) {
			continue
		}
		roots = slices.DeleteFunc(roots, func(have string) bool { return beneath(have, real) })
		roots = append(roots, real)
	}
	return roots
}

// subpaths renders ` (subpath "<r>")` for each root, quoted per § 2.
func (*Seatbelt) subpaths(roots []string) string {
	var b strings.Builder
	for _, r := range roots {
		b.WriteString(" (subpath " + seatbeltQuote(r) + ")")
	}
	return b.String()
}

// seatbeltQuote quotes s as a profile string: `"` + s with `\` and `"`
// backslash-escaped + `"`.
func seatbeltQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func (s *Seatbelt) tempDir() string {
	if s.TempDir != nil {
		return s.TempDir()
	}
	return os.TempDir()
}

// real returns the clean real path of p (p cleaned when it cannot be
// resolved).
func (s *Seatbelt) real(p string) string {
	p = filepath.Clean(p)
	resolve := filepath.EvalSymlinks
	if s.Realpath != nil {
		resolve = s.Realpath
	}
	if r, err := resolve(p); err == nil {
		return filepath.Clean(r)
	}
	return p
}

// protectionGaps implements protectionGaps: the profile denies writes to
// the existing protected paths (canonicalized); a missing one is left to
// the tripwire.
func (*Seatbelt) protectionGaps() (existing, missing bool) { return false, true }
