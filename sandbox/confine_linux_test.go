//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// requireEnv names backends (comma-separated, e.g. "bwrap,landlock") that
// must be usable: with it set, an unusable backend fails the tests instead
// of skipping them. CI sets it so that confinement is never silently
// untested.
const requireEnv = "DSH_SANDBOX_REQUIRE"

// backendCase is a real backend under test with its host-specific facts.
type backendCase struct {
	name string
	new  func(t testing.TB) Backend
	// tmpPrivate: under workspace-write /tmp is a private tmpfs (bwrap)
	// rather than the host's /tmp (landlock).
	tmpPrivate bool
	// namespaces: the command runs in its own PID namespace (bwrap, and
	// the Landlock helper where the host allows it).
	namespaces func(b Backend) bool
}

func testLauncher(t testing.TB) []string {
	t.Helper()
	l, err := HelperLauncher()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var realBackends = []backendCase{
	{name: "bwrap", new: func(testing.TB) Backend { return &Bwrap{} }, tmpPrivate: true,
		namespaces: func(Backend) bool { return true }},
	{name: "landlock", new: func(t testing.TB) Backend { return &Landlock{Launcher: testLauncher(t)} },
		namespaces: func(b Backend) bool { return b.(*Landlock).Namespaces() }},
	{name: "landlock-subreaper", new: func(t testing.TB) Backend { return &Landlock{Launcher: testLauncher(t), NoNamespaces: true} },
		namespaces: func(Backend) bool { return false }},
}

// providers holds one provider per backend value, so that each is probed
// once (a probe per command would be slow, and on a loaded host could flip
// a Landlock's namespaces between commands).
var providers sync.Map // Backend → *Provider

func providerFor(b Backend) *Provider {
	p, _ := providers.LoadOrStore(b, NewProvider(b))
	return p.(*Provider)
}

// requireBackend probes b (once per backend value). When it is unusable
// the test skips loudly with the probe's error, or fails if requireEnv
// lists it.
func requireBackend(t testing.TB, b Backend) Enforcement {
	t.Helper()
	_, enf, err := providerFor(b).Select(context.Background(), ReadOnly)
	if err != nil {
		if slices.Contains(strings.Split(os.Getenv(requireEnv), ","), b.Name()) {
			t.Fatalf("%s backend is required (%s) but unusable: %v", b.Name(), requireEnv, errors.Join(unavailableProbes(err)...))
		}
		t.Skipf("SANDBOX NOT TESTED: %s backend is unusable on this host, its confinement tests are SKIPPED: %v", b.Name(), errors.Join(unavailableProbes(err)...))
	}
	return enf
}

// unavailableProbes returns the probe errors behind a Select error.
func unavailableProbes(err error) []error {
	var u *UnavailableError
	if errors.As(err, &u) && len(u.Probes) > 0 {
		return u.Probes
	}
	return []error{err}
}

// testBase returns a fresh directory that is not under /tmp, so that
// "outside the root" stays outside the writable set in workspace-write.
func testBase(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	for _, cand := range []string{"/var/tmp", wd} {
		real, err := filepath.EvalSymlinks(cand)
		if err != nil || real == "/tmp" || strings.HasPrefix(real, "/tmp/") {
			continue
		}
		d, err := os.MkdirTemp(real, "dsh-sandbox-test-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { _ = os.RemoveAll(d) })
		return d
	}
	t.Fatal("no writable directory outside /tmp for the confinement tests")
	return ""
}

type runResult struct {
	code           int
	signal         syscall.Signal
	stdout, stderr string
}

// spawn is a confined argv and the setup its command needs.
type spawn struct {
	argv  []string
	setup func(*exec.Cmd)
	env   []string // nil: the test's environment
}

// plain is an argv spawned as is.
func plain(argv []string) spawn { return spawn{argv: argv} }

// run spawns s in dir, as the bash tool does, and waits for it and for
// every process holding its output pipes (so a backgrounded child is
// waited for too).
func run(t *testing.T, s spawn, dir string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv := s.argv
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = s.env
	if s.setup != nil {
		s.setup(cmd)
	}
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %q: %v", argv, err)
	}
	res := runResult{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.signal = ws.Signal()
	}
	return res
}

// markerPids lists the host processes whose argv[0] is marker.
func markerPids(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(b), marker+"\x00") {
			out = append(out, e.Name())
		}
	}
	return out
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// escapeFixture is a workspace root, a directory outside it with a
// readable file, and a symlink inside the root pointing outside.
type escapeFixture struct {
	root, outside string
}

func newEscapeFixture(t *testing.T) escapeFixture {
	t.Helper()
	base := testBase(t)
	f := escapeFixture{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{f.root, f.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.outside, "readme"), []byte("readable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.outside, filepath.Join(f.root, "escape")); err != nil {
		t.Fatal(err)
	}
	return f
}

// confine wraps `bash -c script` for backend b under mode with root.
func confine(t *testing.T, b Backend, mode Mode, root, script string) spawn {
	t.Helper()
	return confinePolicy(t, b, Policy{Mode: mode, WorkspaceRoot: root}, script)
}

// confinePolicy wraps `bash -c script` for backend b under policy.
func confinePolicy(t *testing.T, b Backend, policy Policy, script string) spawn {
	t.Helper()
	enf := requireBackend(t, b)
	c, err := providerFor(b).Confine(context.Background(), []string{"bash", "-c", script}, policy)
	if err != nil {
		t.Fatal(err)
	}
	if c.Backend != b || c.Enforcement != enf || c.Mode != policy.Mode {
		t.Fatalf("confined = %+v", c)
	}
	return spawn{argv: c.Argv, setup: c.Setup}
}

// expectDenied asserts a failed run that the backend classifies as a
// denial (not a runner failure) from the real stderr.
func expectDenied(t *testing.T, b Backend, r runResult) {
	t.Helper()
	if r.code == 0 {
		t.Fatalf("escape succeeded: exit 0, stdout %q, stderr %q", r.stdout, r.stderr)
	}
	v := b.Classify(r.code, r.stderr)
	if !v.Denied || v.RunnerFailure {
		t.Fatalf("exit %d, stderr %q: verdict %+v, want a denial", r.code, r.stderr, v)
	}
}

func expectOK(t *testing.T, b Backend, r runResult) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q, verdict %+v", r.code, r.stdout, r.stderr, b.Classify(r.code, r.stderr))
	}
}

func TestConfinementEscapes(t *testing.T) {
	for _, bc := range realBackends {
		for _, mode := range []Mode{ReadOnly, WorkspaceWrite} {
			t.Run(bc.name+"/"+string(mode), func(t *testing.T) {
				t.Parallel()
				b := bc.new(t)
				requireBackend(t, b)
				testEscapes(t, bc, b, mode)
			})
		}
	}
}

func testEscapes(t *testing.T, bc backendCase, b Backend, mode Mode) {
	t.Run("write outside the root", func(t *testing.T) {
		f := newEscapeFixture(t)
		target := filepath.Join(f.outside, "f")
		expectDenied(t, b, run(t, confine(t, b, mode, f.root, "echo x > "+target), f.root))
		if exists(target) {
			t.Fatal("file written outside the root")
		}
	})
	t.Run("write through a symlink", func(t *testing.T) {
		f := newEscapeFixture(t)
		expectDenied(t, b, run(t, confine(t, b, mode, f.root, "echo x > escape/f"), f.root))
		if exists(filepath.Join(f.outside, "f")) {
			t.Fatal("file written through the symlink")
		}
	})
	t.Run("move a file out of the root", func(t *testing.T) {
		f := newEscapeFixture(t)
		if err := os.WriteFile(filepath.Join(f.root, "mine"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		expectDenied(t, b, run(t, confine(t, b, mode, f.root, "mv mine "+f.outside+"/"), f.root))
		if exists(filepath.Join(f.outside, "mine")) || !exists(filepath.Join(f.root, "mine")) {
			t.Fatal("file moved out of the root")
		}
	})
	t.Run("a background child dies with its command", func(t *testing.T) {
		f := newEscapeFixture(t)
		marker := fmt.Sprintf("dsh-sandbox-orphan-%d-%d", os.Getpid(), time.Now().UnixNano())
		// run waits until the child closes the inherited output pipes: it
		// returns early only because the child is killed when the command
		// exits (its namespace, or its supervising helper).
		start := time.Now()
		r := run(t, confine(t, b, mode, f.root, "(exec -a "+marker+" sleep 30) & (setsid bash -c 'exec -a "+marker+" sleep 30' &) ; exit 0"), f.root)
		if r.code != 0 {
			t.Fatalf("parent: exit %d, stderr %q", r.code, r.stderr)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("the command's children held its pipes for %v", d)
		}
		if pids := markerPids(marker); len(pids) > 0 {
			t.Fatalf("children outlived their command: %v", pids)
		}
	})
	t.Run("reading is allowed", func(t *testing.T) {
		f := newEscapeFixture(t)
		r := run(t, confine(t, b, mode, f.root, "cat escape/readme "+f.outside+"/readme; ls /etc >/dev/null"), f.root)
		expectOK(t, b, r)
		if r.stdout != "readable\nreadable\n" {
			t.Fatalf("stdout %q", r.stdout)
		}
	})
	t.Run("/dev/null is writable", func(t *testing.T) {
		f := newEscapeFixture(t)
		expectOK(t, b, run(t, confine(t, b, mode, f.root, "echo x > /dev/null"), f.root))
	})
	t.Run("/tmp", func(t *testing.T) {
		f := newEscapeFixture(t)
		target := fmt.Sprintf("/tmp/dsh-sandbox-%s-%d-%d", bc.name, os.Getpid(), time.Now().UnixNano())
		t.Cleanup(func() { _ = os.Remove(target) })
		r := run(t, confine(t, b, mode, f.root, "echo x > "+target), f.root)
		switch {
		case mode == ReadOnly:
			expectDenied(t, b, r)
			if exists(target) {
				t.Fatal("/tmp written in read-only mode")
			}
		case bc.tmpPrivate:
			expectOK(t, b, r)
			if exists(target) {
				t.Fatal("the private /tmp leaked to the host")
			}
		default:
			expectOK(t, b, r)
			if !exists(target) {
				t.Fatal("/tmp write did not land")
			}
		}
	})
	t.Run("write inside the root", func(t *testing.T) {
		f := newEscapeFixture(t)
		script := "mkdir -p a b && echo x > a/f && mv a/f b/f && ln -s b/f link && rm -r a"
		r := run(t, confine(t, b, mode, f.root, script), f.root)
		if mode == ReadOnly {
			expectDenied(t, b, r)
			if exists(filepath.Join(f.root, "a")) {
				t.Fatal("root written in read-only mode")
			}
			return
		}
		expectOK(t, b, r)
		if got, err := os.ReadFile(filepath.Join(f.root, "link")); err != nil || string(got) != "x\n" {
			t.Fatalf("workspace write: %q %v", got, err)
		}
	})
}

func TestRunnerFailures(t *testing.T) {
	missingRoot := "/nonexistent-dsh-sandbox-root"
	t.Run("bwrap", func(t *testing.T) {
		b := &Bwrap{}
		requireBackend(t, b)
		// A workspace root that does not exist makes bwrap itself fail.
		r := run(t, plain(b.Wrap(Policy{Mode: WorkspaceWrite, WorkspaceRoot: missingRoot}, []string{"true"})), "/")
		expectRunnerFailure(t, b, r, 1)
		// So does a flag it does not know.
		argv := slices.Insert(b.Wrap(Policy{Mode: ReadOnly}, []string{"true"}), 1, "--no-such-flag")
		expectRunnerFailure(t, b, run(t, plain(argv), "/"), 1)
	})
	t.Run("landlock", func(t *testing.T) {
		b := &Landlock{Launcher: testLauncher(t)}
		requireBackend(t, b)
		setup := b.Prepare(Policy{})
		for _, s := range []func(*exec.Cmd){nil, setup} {
			r := run(t, spawn{argv: b.Wrap(Policy{Mode: ReadOnly}, []string{"no-such-command-dsh"}), setup: s}, "/")
			expectRunnerFailure(t, b, r, HelperExitCode)
			r = run(t, spawn{argv: b.Wrap(Policy{Mode: WorkspaceWrite, WorkspaceRoot: missingRoot}, []string{"true"}), setup: s}, "/")
			expectRunnerFailure(t, b, r, HelperExitCode)
			r = run(t, spawn{argv: append(slices.Clone(b.Launcher), "--bogus"), setup: s}, "/")
			expectRunnerFailure(t, b, r, HelperExitCode)
			r = run(t, spawn{argv: b.Wrap(Policy{Mode: ReadOnly, TmpDir: missingRoot}, []string{"true"}), setup: s}, "/")
			expectRunnerFailure(t, b, r, HelperExitCode)
		}
	})
}

func expectRunnerFailure(t *testing.T, b Backend, r runResult, wantCode int) {
	t.Helper()
	v := b.Classify(r.code, r.stderr)
	if r.code != wantCode || !v.RunnerFailure || v.Denied {
		t.Fatalf("exit %d (want %d), stderr %q: verdict %+v, want a runner failure", r.code, wantCode, r.stderr, v)
	}
	if want := " Runner failure: " + v.Detail; !strings.HasSuffix(RunnerFailureError(ReadOnly, r.stderr).Error(), want) {
		t.Fatalf("runner failure error lacks %q", want)
	}
}

// TestDefaultChain checks the real preference chain: the first usable
// backend in [bwrap, landlock] wins, and only landlock may be partial.
func TestDefaultChain(t *testing.T) {
	chain := DefaultChain(testLauncher(t))
	if len(chain) != 2 || chain[0].Name() != "bwrap" || chain[1].Name() != "landlock" {
		t.Fatalf("chain = %v", chain)
	}
	p := NewProvider(chain...)
	c, err := p.Confine(context.Background(), []string{"true"}, Policy{Mode: ReadOnly})
	if err != nil {
		if IsUnavailable(err) && os.Getenv(requireEnv) == "" {
			t.Skipf("SANDBOX NOT TESTED: no backend usable on this host: %v", err)
		}
		t.Fatal(err)
	}
	var want string
	for _, b := range chain {
		if _, err := b.Probe(context.Background()); err == nil {
			want = b.Name()
			break
		}
	}
	if c.Backend.Name() != want {
		t.Fatalf("selected %s, want %s", c.Backend.Name(), want)
	}
	t.Logf("selected backend %s (%s enforcement)", c.Backend.Name(), c.Enforcement)
	expectOK(t, c.Backend, run(t, spawn{argv: c.Argv, setup: c.Setup}, "/"))
}
