package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// HelperArg is the first argument that turns our own binary into the
// Landlock helper: `<exe> __landlock-run [--probe | --probe-ns | [--tmp DIR
// [--show P…]] --ro P… --rw P… [--no-net] [--protect P…] [--hide P…] --
// argv…]`. `--show P` keeps P, beneath /tmp, visible when DIR is mapped at
// /tmp; `--no-net`, `--protect` and `--hide` are [Policy.NoNetwork],
// [Policy.Protected] and [Policy.Hidden].
const HelperArg = "__landlock-run"

// Reports printed by the helper's --probe (§ 2) and --probe-ns.
const (
	probeFull    = "landlock: fully enforced"
	probePartial = "landlock: partially enforced (older ABI)"
	probeNS      = "landlock: namespaces"
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
//
// Where the host lets the agent create PID and mount namespaces (as root,
// or through an unprivileged user namespace), [Landlock.Prepare] asks for
// them at spawn and the helper runs as the namespace's init: a fresh
// /proc, the session's /tmp bind-mounted, every process killed by the
// kernel when the command ends. Elsewhere the helper supervises the
// command as a subreaper and kills every descendant itself. Probe finds out
// which; a Landlock must not be copied after its first use. (A non-root
// agent that made itself non-dumpable cannot write a child's uid map, so it
// always gets the subreaper.)
type Landlock struct {
	// Launcher is the argv prefix that starts the helper, typically
	// [<os.Executable()>, HelperArg] (see [HelperLauncher]).
	Launcher []string
	// NoNamespaces keeps the helper out of namespaces even where the host
	// offers them (it then always runs as a subreaper).
	NoNamespaces bool

	mu       sync.Mutex
	ns       *nsSpawn                  // the namespaces the helper gets at spawn; nil: none
	rulesets map[string]*cachedRuleset // per helper policy, for the helper as a subreaper
}

// Name returns "landlock".
func (*Landlock) Name() string { return "landlock" }

// Probe runs `<launcher> --probe` with a 5 s timeout. It must exit 0 and
// print `landlock: fully enforced` (full) or `landlock: partially enforced
// (older ABI)` (partial); anything else is unusable. A usable helper is
// then started once more, as `<launcher> --probe-ns` in fresh namespaces,
// to learn whether it can run as their init (see [Landlock.Namespaces]);
// that check never makes the backend unusable.
func (l *Landlock) Probe(ctx context.Context) (Enforcement, error) {
	if len(l.Launcher) == 0 {
		return "", errors.New("no launcher configured")
	}
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	argv := append(append([]string(nil), l.Launcher...), "--probe")
	cmd := exec.CommandContext(pctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if line := FirstLine(stderr.String()); line != "" {
			return "", fmt.Errorf("probe: %w: %s", err, line)
		}
		return "", fmt.Errorf("probe: %w", err)
	}
	var enf Enforcement
	switch report := strings.TrimSpace(stdout.String()); report {
	case probeFull:
		enf = EnforcementFull
	case probePartial:
		enf = EnforcementPartial
	default:
		return "", fmt.Errorf("probe: unexpected report %q", report)
	}
	var ns *nsSpawn
	if !l.NoNamespaces {
		nctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		ns = detectNamespaces(nctx, l.Launcher)
		cancel()
	}
	l.mu.Lock()
	l.ns = ns
	l.mu.Unlock()
	return enf, nil
}

// Namespaces reports whether the helper runs as a namespace init: Probe
// found that this host lets the agent create the namespaces, and
// NoNamespaces is not set.
func (l *Landlock) Namespaces() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ns != nil
}

// Wrap returns `<launcher> --ro / --rw /dev/null` [+ `--tmp <TmpDir>`, and
// `--show <root>` for a read-only root beneath /tmp] [+ `--rw /tmp --rw
// <root>` for workspace-write] [+ the containment: `--no-net`, `--protect
// P`, `--hide P`] `--` argv.
func (l *Landlock) Wrap(policy Policy, argv []string) []string {
	out := append([]string(nil), l.Launcher...)
	out = append(out, "--ro", "/", "--rw", "/dev/null")
	if policy.TmpDir != "" {
		out = append(out, "--tmp", policy.TmpDir)
		for _, root := range append([]string{policy.WorkspaceRoot}, policy.ExtraRoots...) {
			if policy.Mode != WorkspaceWrite && root != "" && beneath(root, "/tmp") {
				out = append(out, "--show", root)
			}
		}
	}
	if policy.Mode == WorkspaceWrite {
		out = append(out, "--rw", "/tmp", "--rw", policy.WorkspaceRoot)
		for _, r := range policy.ExtraRoots {
			out = append(out, "--rw", r)
		}
	}
	if policy.NoNetwork {
		out = append(out, "--no-net")
	}
	for _, p := range policy.Protected {
		out = append(out, "--protect", p)
	}
	for _, p := range policy.Hidden {
		out = append(out, "--hide", p)
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
	probe   bool
	probeNS bool
	tmp     string
	show    []string
	ro      []string
	rw      []string
	noNet   bool
	protect []string
	hide    []string
	argv    []string
}

// parseHelperArgs parses `--probe`, `--probe-ns` or `[--tmp DIR] [--show
// P…] --ro P… --rw P… -- argv…`.
func parseHelperArgs(args []string) (helperArgs, error) {
	var h helperArgs
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--probe":
			h.probe = true
		case "--probe-ns":
			h.probe, h.probeNS = true, true
		case "--tmp":
			if i+1 >= len(args) || !filepath.IsAbs(args[i+1]) {
				return h, errors.New("--tmp needs an absolute path")
			}
			i++
			h.tmp = filepath.Clean(args[i])
		case "--show", "--protect", "--hide":
			if i+1 >= len(args) || !filepath.IsAbs(args[i+1]) {
				return h, fmt.Errorf("%s needs an absolute path", a)
			}
			i++
			p := filepath.Clean(args[i])
			switch a {
			case "--show":
				h.show = append(h.show, p)
			case "--protect":
				h.protect = append(h.protect, p)
			default:
				h.hide = append(h.hide, p)
			}
		case "--no-net":
			h.noNet = true
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

// protectionGaps implements protectionGaps: the helper in namespaces
// mounts existing protected paths read-only; as a subreaper it cannot keep
// any of them, and in neither case a missing one.
func (l *Landlock) protectionGaps() (existing, missing bool) { return !l.Namespaces(), true }

// mountsReadOnly reports whether the helper enforces the containment's
// hidden and protected paths by read-only mounts (in namespaces), whose
// denials read `read-only file system` rather than the dialect's
// `permission denied`.
func (l *Landlock) mountsReadOnly() bool { return l.Namespaces() }
