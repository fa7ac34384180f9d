package sandbox

import (
	"bytes"
	"context"
	"fmt"
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
	if policy.TmpDir != "" {
		out = append(out, "--setenv", "TMPDIR", "/tmp")
	}
	if policy.NoNetwork {
		out = append(out, "--unshare-net")
	}
	out = append(out, "--")
	return append(out, argv...)
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
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// Classify classifies in the bwrap dialect: runner failure on `bwrap: `,
// denial on `read-only file system`.
func (*Bwrap) Classify(exitCode int, stderr string) Verdict {
	return classify(exitCode, stderr, []string{"bwrap: "}, []string{"read-only file system"})
}
