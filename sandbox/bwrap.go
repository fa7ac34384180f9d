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

// Wrap returns `bwrap --ro-bind / / --dev /dev --proc /proc
// --die-with-parent` [+ `--tmpfs /tmp --bind <root> <root>` for
// workspace-write] `--` argv.
func (b *Bwrap) Wrap(policy Policy, argv []string) []string {
	out := bwrapBase(b.path())
	if policy.Mode == WorkspaceWrite {
		out = append(out, "--tmpfs", "/tmp", "--bind", policy.WorkspaceRoot, policy.WorkspaceRoot)
	}
	out = append(out, "--")
	return append(out, argv...)
}

// Classify classifies in the bwrap dialect: runner failure on `bwrap: `,
// denial on `read-only file system`.
func (*Bwrap) Classify(exitCode int, stderr string) Verdict {
	return classify(exitCode, stderr, []string{"bwrap: "}, []string{"read-only file system"})
}
