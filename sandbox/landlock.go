package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// HelperArg is the first argument that turns our own binary into the
// Landlock helper: `<exe> __landlock-run [--probe | --ro P… --rw P… -- argv…]`.
const HelperArg = "__landlock-run"

// Reports printed by the helper's --probe (§ 2).
const (
	probeFull    = "landlock: fully enforced"
	probePartial = "landlock: partially enforced (older ABI)"
)

// HelperExitCode is the helper's exit code for its own failures.
const HelperExitCode = 125

// MaybeRunHelper runs the Landlock helper and exits when the process was
// started as one (os.Args[1] == [HelperArg]); otherwise it returns at once.
// Call it first thing in main, before anything else starts.
func MaybeRunHelper() {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		os.Exit(RunLandlockHelper(os.Args[2:]))
	}
}

// Landlock is the Landlock backend: a launcher (our own binary re-executed
// as the helper) that restricts itself and then execs the command, since
// Landlock restriction is irrevocable for the calling process.
type Landlock struct {
	// Launcher is the argv prefix that starts the helper, typically
	// [<os.Executable()>, HelperArg] (see [HelperLauncher]).
	Launcher []string
}

// Name returns "landlock".
func (*Landlock) Name() string { return "landlock" }

// Probe runs `<launcher> --probe` with a 5 s timeout. It must exit 0 and
// print `landlock: fully enforced` (full) or `landlock: partially enforced
// (older ABI)` (partial); anything else is unusable.
func (l *Landlock) Probe(ctx context.Context) (Enforcement, error) {
	if len(l.Launcher) == 0 {
		return "", errors.New("no launcher configured")
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	argv := append(append([]string(nil), l.Launcher...), "--probe")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if line := FirstLine(stderr.String()); line != "" {
			return "", fmt.Errorf("probe: %w: %s", err, line)
		}
		return "", fmt.Errorf("probe: %w", err)
	}
	switch report := strings.TrimSpace(stdout.String()); report {
	case probeFull:
		return EnforcementFull, nil
	case probePartial:
		return EnforcementPartial, nil
	default:
		return "", fmt.Errorf("probe: unexpected report %q", report)
	}
}

// Wrap returns `<launcher> --ro / --rw /dev/null` [+ `--rw /tmp --rw
// <root>` for workspace-write] `--` argv.
func (l *Landlock) Wrap(policy Policy, argv []string) []string {
	out := append([]string(nil), l.Launcher...)
	out = append(out, "--ro", "/", "--rw", "/dev/null")
	if policy.Mode == WorkspaceWrite {
		out = append(out, "--rw", "/tmp", "--rw", policy.WorkspaceRoot)
	}
	out = append(out, "--")
	return append(out, argv...)
}

// Classify classifies in the landlock dialect: runner failure on
// `landlock-run: `, denial on `permission denied`.
func (*Landlock) Classify(exitCode int, stderr string) Verdict {
	return classify(exitCode, stderr, []string{"landlock-run: "}, []string{"permission denied"})
}

// helperArgs is the parsed helper command line.
type helperArgs struct {
	probe bool
	ro    []string
	rw    []string
	argv  []string
}

// parseHelperArgs parses `--probe` or `--ro P… --rw P… -- argv…`.
func parseHelperArgs(args []string) (helperArgs, error) {
	var h helperArgs
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--probe":
			h.probe = true
		case "--ro", "--rw":
			if i+1 >= len(args) {
				return h, fmt.Errorf("%s needs a path", a)
			}
			i++
			if args[i] == "" {
				return h, fmt.Errorf("%s needs a non-empty path", a)
			}
			if a == "--ro" {
				h.ro = append(h.ro, args[i])
			} else {
				h.rw = append(h.rw, args[i])
			}
		case "--":
			h.argv = args[i+1:]
			if len(h.argv) == 0 {
				return h, errors.New("no command after --")
			}
			if h.probe {
				return h, errors.New("--probe takes no command")
			}
			return h, nil
		default:
			return h, fmt.Errorf("unknown argument %q", a)
		}
	}
	if !h.probe {
		return h, errors.New("missing -- and command")
	}
	return h, nil
}
