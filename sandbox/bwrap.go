package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// ProbeTimeout bounds each backend's functional probe.
const ProbeTimeout = 5 * time.Second

// Bwrap is the bubblewrap backend. Its zero value runs "bwrap" from PATH.
type Bwrap struct {
	// Path is argv[0] of the wrapped command; empty means "bwrap".
	Path string
}

// Name returns "bwrap".
func (*Bwrap) Name() string { return "bwrap" }

func (b *Bwrap) path() string {
	if b.Path == "" {
		return "bwrap"
	}
	return b.Path
}

// bwrapBase is the read-only profile shared by the probe and both modes.
func bwrapBase(path string) []string {
	return []string{path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent"}
}

// Probe runs `bwrap --ro-bind / / --dev /dev --proc /proc --die-with-parent
// -- true` with a 5 s timeout; exit 0 means usable with full enforcement.
func (b *Bwrap) Probe(ctx context.Context) (Enforcement, error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	argv := append(bwrapBase(b.path()), "--", "true")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if line := FirstLine(stderr.String()); line != "" {
			return "", fmt.Errorf("probe %q: %w: %s", strings.Join(argv, " "), err, line)
		}
		return "", fmt.Errorf("probe %q: %w", strings.Join(argv, " "), err)
	}
	return EnforcementFull, nil
}

// bwrapHardening isolates the command beyond file access: a PID namespace
// with its own /proc (the agent and every other host process are invisible,
// and everything the command leaves behind dies with it), a new session (no
// terminal to inject input into) and no capabilities, so that root inside
// cannot remount, mount or unshare its way out.
var bwrapHardening = [...]string{"--unshare-pid", "--new-session", "--cap-drop", "ALL"}

// Wrap returns `bwrap --ro-bind / / --dev /dev --proc /proc
// --die-with-parent --unshare-pid --new-session --cap-drop ALL`, then the
// /tmp and workspace mounts, then `--` argv. Without a TmpDir,
// workspace-write adds `--tmpfs /tmp --bind <root> <root>` (a fresh /tmp per
// command); with one, /tmp is `--bind <TmpDir> /tmp` (remounted read-only
// under read-only), the root is bound again when it lies beneath /tmp, and
// `--setenv TMPDIR /tmp` is added.
func (b *Bwrap) Wrap(policy Policy, argv []string) []string {
	out := append(bwrapBase(b.path()), bwrapHardening[:]...)
	ww := policy.Mode == WorkspaceWrite
	root := policy.WorkspaceRoot
	switch {
	case policy.TmpDir == "":
		if ww {
			out = append(out, "--tmpfs", "/tmp", "--bind", root, root)
			out = bindExtra(out, policy.ExtraRoots)
		}
	case ww:
		out = append(out, "--bind", policy.TmpDir, "/tmp", "--bind", root, root)
		out = bindExtra(out, policy.ExtraRoots)
	default:
		out = append(out, "--bind", policy.TmpDir, "/tmp")
		for _, r := range append([]string{root}, policy.ExtraRoots...) {
			if r != "" && beneath(r, "/tmp") {
				out = append(out, "--ro-bind", r, r)
			}
		}
		out = append(out, "--remount-ro", "/tmp")
	}
	out = bwrapContain(out, policy)
	if policy.TmpDir != "" {
		out = append(out, "--setenv", "TMPDIR", "/tmp")
	}
	out = append(out, "--")
	return append(out, argv...)
}

// bwrapContain adds the containment of a policy: `--unshare-net` for
// NoNetwork, `--ro-bind P P` for each protected path, then `--ro-bind
// /dev/null P` for each hidden file and last `--tmpfs P` for each hidden
// directory. A hidden path wins over a protected one, being mounted
// after it; a hidden file beneath a hidden directory is covered by the
// directory's tmpfs.
//
// A hidden directory is one mount, an empty tmpfs of the sandbox's own,
// not remounted read-only: bwrap's --remount-ro (like each of its binds)
// rereads the namespace's mount table, and cost about 60 µs a directory
// (docs/performance.md, #26), where the tmpfs alone costs about 10 µs. The
// guarantees stay: nothing of the real directory can be read through the
// tmpfs, which covers it whole, and nothing written there reaches it (the
// tmpfs lives in the sandbox's mount namespace and is gone with it, as
// the writable tmpfs bwrap's --dev puts at /dev already is; the command
// cannot unmount it, having no capabilities). What changes is that a
// command writing beneath a hidden directory sees its write succeed, in
// that scratch space, rather than fail as read-only.
func bwrapContain(out []string, policy Policy) []string {
	if policy.NoNetwork {
		out = append(out, "--unshare-net")
	}
	for _, p := range policy.Protected {
		if mountable(policy, p) {
			out = append(out, "--ro-bind", p, p)
		}
	}
	var dirs []string
	for _, p := range policy.Hidden {
		if !mountable(policy, p) {
			continue
		}
		if isDir(p) {
			dirs = append(dirs, p)
		} else {
			out = append(out, "--ro-bind", "/dev/null", p)
		}
	}
	for _, p := range dirs {
		out = append(out, "--tmpfs", p)
	}
	return out
}

// mountable reports whether a containment mount over p is wanted: not for
// a path beneath a /tmp the sandbox replaces (it is not visible there, and
// its mount point would be made in the replacement), unless a workspace
// root keeps it visible.
func mountable(policy Policy, p string) bool {
	if !beneath(p, "/tmp") || (policy.TmpDir == "" && policy.Mode != WorkspaceWrite) {
		return true
	}
	for _, r := range append([]string{policy.WorkspaceRoot}, policy.ExtraRoots...) {
		if r != "" && beneath(p, r) {
			return true
		}
	}
	return false
}

// isDir reports whether p is a directory (following symlinks).
func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// bindExtra binds each extra workspace root writable at its path.
func bindExtra(out, roots []string) []string {
	for _, r := range roots {
		out = append(out, "--bind", r, r)
	}
	return out
}

// beneath reports whether the clean absolute path p is dir or lies below
// it.
func beneath(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// Classify classifies in the bwrap dialect: runner failure on `bwrap: `,
// denial on `read-only file system`.
func (*Bwrap) Classify(exitCode int, stderr string) Verdict {
	return classify(exitCode, stderr, []string{"bwrap: "}, []string{"read-only file system"})
}

// protectionGaps implements protectionGaps: bwrap mounts existing
// protected paths read-only; a missing one is left to the tripwire.
func (*Bwrap) protectionGaps() (existing, missing bool) { return false, true }
