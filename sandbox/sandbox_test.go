package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// TestMain lets the test binary double as the Landlock helper: the
// Landlock tests re-execute it as `<test binary> __landlock-run …`.
func TestMain(m *testing.M) {
	MaybeRunHelper()
	if os.Getenv("GORACE") == "" {
		// A race-enabled binary lingers a second at exit; the helpers this
		// binary is re-executed as need not.
		_ = os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

const unavailableReadOnly = `sandbox mode "read-only" is requested but no sandbox backend is usable on this host; ` +
	`refusing to run the command unconfined. Install bubblewrap or run a Landlock-enforcing kernel (Linux), ` +
	`ensure sandbox-exec is usable (macOS) — Windows has no confinement backend yet — or switch the consumer ` +
	`to danger-full-access.`

func TestUnavailableErrorText(t *testing.T) {
	p := NewProvider()
	_, err := p.Confine(context.Background(), []string{"bash", "-c", "true"}, Policy{Mode: ReadOnly})
	var u *UnavailableError
	if !errors.As(err, &u) {
		t.Fatalf("Confine with an empty chain: got %v, want *UnavailableError", err)
	}
	if got := err.Error(); got != unavailableReadOnly {
		t.Fatalf("message:\n got %q\nwant %q", got, unavailableReadOnly)
	}
	if u.Name() != "SandboxUnavailableError" || u.Code() != "SANDBOX_UNAVAILABLE" {
		t.Fatalf("name/code = %q/%q", u.Name(), u.Code())
	}
	if !IsUnavailable(err) {
		t.Fatal("IsUnavailable = false")
	}

	_, err = p.Confine(context.Background(), []string{"true"}, Policy{Mode: WorkspaceWrite, WorkspaceRoot: "/w"})
	if want := strings.Replace(unavailableReadOnly, `"read-only"`, `"workspace-write"`, 1); err == nil || err.Error() != want {
		t.Fatalf("workspace-write message: got %v", err)
	}

	rf := RunnerFailureError(ReadOnly, "\n  bwrap: Can't mount proc on /newroot/proc: Operation not permitted\nmore\n")
	if want := unavailableReadOnly + " Runner failure: bwrap: Can't mount proc on /newroot/proc: Operation not permitted"; rf.Error() != want {
		t.Fatalf("runner failure message:\n got %q\nwant %q", rf.Error(), want)
	}
}

// fake is a scripted backend that counts its probes.
type fake struct {
	name   string
	enf    Enforcement
	err    error
	probes atomic.Int32
}

func (f *fake) Name() string { return f.name }
func (f *fake) Probe(context.Context) (Enforcement, error) {
	f.probes.Add(1)
	return f.enf, f.err
}
func (f *fake) Wrap(_ Policy, argv []string) []string { return append([]string{f.name, "--"}, argv...) }
func (f *fake) Classify(int, string) Verdict          { return Verdict{} }

func TestProviderPreferenceOrderAndCaching(t *testing.T) {
	a := &fake{name: "a", err: errors.New("no namespaces")}
	b := &fake{name: "b", enf: EnforcementPartial}
	c := &fake{name: "c", enf: EnforcementFull}
	p := NewProvider(a, b, c)
	for range 3 {
		got, err := p.Confine(context.Background(), []string{"true"}, Policy{Mode: ReadOnly})
		if err != nil {
			t.Fatal(err)
		}
		if got.Backend != b || got.Enforcement != EnforcementPartial || !slices.Equal(got.Argv, []string{"b", "--", "true"}) {
			t.Fatalf("confined = %+v", got)
		}
	}
	if a.probes.Load() != 1 || b.probes.Load() != 1 || c.probes.Load() != 0 {
		t.Fatalf("probes a=%d b=%d c=%d, want 1 1 0", a.probes.Load(), b.probes.Load(), c.probes.Load())
	}
}

func TestProviderCachesUnavailability(t *testing.T) {
	a := &fake{name: "a", err: errors.New("missing")}
	p := NewProvider(a)
	for range 2 {
		_, err := p.Confine(context.Background(), []string{"true"}, Policy{Mode: ReadOnly})
		var u *UnavailableError
		if !errors.As(err, &u) || len(u.Probes) != 1 || !strings.Contains(u.Probes[0].Error(), "a: missing") {
			t.Fatalf("err = %#v", err)
		}
	}
	if a.probes.Load() != 1 {
		t.Fatalf("probed %d times, want 1", a.probes.Load())
	}
}

func TestProviderDoesNotCacheCancelledProbe(t *testing.T) {
	a := &fake{name: "a", enf: EnforcementFull}
	p := NewProvider(a)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Confine(ctx, []string{"true"}, Policy{Mode: ReadOnly}); !errors.Is(err, context.Canceled) || IsUnavailable(err) {
		t.Fatalf("cancelled probe: err = %v", err)
	}
	if _, err := p.Confine(context.Background(), []string{"true"}, Policy{Mode: ReadOnly}); err != nil {
		t.Fatalf("after cancellation: %v", err)
	}
}

func TestDangerFullAccessNeverTouchesProvider(t *testing.T) {
	a := &fake{name: "a", enf: EnforcementFull}
	p := NewProvider(a)
	argv := []string{"bash", "-c", "echo hi"}
	got, err := p.Confine(context.Background(), argv, Policy{Mode: DangerFullAccess})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Argv, argv) || got.Backend != nil || got.Enforcement != "" || a.probes.Load() != 0 {
		t.Fatalf("confined = %+v, probes = %d", got, a.probes.Load())
	}
	// Even an empty chain never fails danger-full-access.
	if _, err := NewProvider().Confine(context.Background(), argv, Policy{Mode: DangerFullAccess}); err != nil {
		t.Fatal(err)
	}
	facts, _ := json.Marshal(got.Facts(got.Classify(1, "Read-only file system")))
	if string(facts) != `{"mode":"danger-full-access","denied":false}` {
		t.Fatalf("facts = %s", facts)
	}
}

func TestConfineRejectsBadInput(t *testing.T) {
	p := NewProvider(&fake{name: "a", enf: EnforcementFull})
	ctx := context.Background()
	cases := []struct {
		argv   []string
		policy Policy
	}{
		{nil, Policy{Mode: ReadOnly}},
		{[]string{"true"}, Policy{Mode: "sideways"}},
		{[]string{"true"}, Policy{Mode: WorkspaceWrite}},
		{[]string{"true"}, Policy{Mode: WorkspaceWrite, WorkspaceRoot: "relative/dir"}},
		{[]string{"true"}, Policy{Mode: ReadOnly, TmpDir: "relative/tmp"}},
	}
	for _, c := range cases {
		if _, err := p.Confine(ctx, c.argv, c.policy); err == nil || IsUnavailable(err) {
			t.Errorf("Confine(%q, %+v): err = %v, want a plain error", c.argv, c.policy, err)
		}
	}
}

func TestWrapArgv(t *testing.T) {
	argv := []string{"bash", "-c", "echo hi"}
	ro := Policy{Mode: ReadOnly, WorkspaceRoot: "/w"}
	ww := Policy{Mode: WorkspaceWrite, WorkspaceRoot: "/w"}
	cases := []struct {
		b      Backend
		policy Policy
		want   string
	}{
		{&Bwrap{}, ro, "bwrap --ro-bind / / --dev /dev --proc /proc --die-with-parent --unshare-pid --new-session --cap-drop ALL -- bash -c echo hi"},
		{&Bwrap{}, ww, "bwrap --ro-bind / / --dev /dev --proc /proc --die-with-parent --unshare-pid --new-session --cap-drop ALL --tmpfs /tmp --bind /w /w -- bash -c echo hi"},
		{&Bwrap{}, withTmp(ro, "/s"), "bwrap --ro-bind / / --dev /dev --proc /proc --die-with-parent --unshare-pid --new-session --cap-drop ALL " +
			"--bind /s /tmp --remount-ro /tmp --setenv TMPDIR /tmp -- bash -c echo hi"},
		{&Bwrap{}, withTmp(ww, "/s"), "bwrap --ro-bind / / --dev /dev --proc /proc --die-with-parent --unshare-pid --new-session --cap-drop ALL " +
			"--bind /s /tmp --bind /w /w --setenv TMPDIR /tmp -- bash -c echo hi"},
		{&Bwrap{}, Policy{Mode: ReadOnly, WorkspaceRoot: "/tmp/w", TmpDir: "/s"}, "bwrap --ro-bind / / --dev /dev --proc /proc --die-with-parent --unshare-pid --new-session --cap-drop ALL " +
			"--bind /s /tmp --ro-bind /tmp/w /tmp/w --remount-ro /tmp --setenv TMPDIR /tmp -- bash -c echo hi"},
		{&Landlock{Launcher: []string{"/bin/dsh", HelperArg}}, ro, "/bin/dsh __landlock-run --ro / --rw /dev/null -- bash -c echo hi"},
		{&Landlock{Launcher: []string{"/bin/dsh", HelperArg}}, ww, "/bin/dsh __landlock-run --ro / --rw /dev/null --rw /tmp --rw /w -- bash -c echo hi"},
		{&Landlock{Launcher: []string{"/bin/dsh", HelperArg}}, withTmp(ro, "/s"), "/bin/dsh __landlock-run --ro / --rw /dev/null --tmp /s -- bash -c echo hi"},
		{&Landlock{Launcher: []string{"/bin/dsh", HelperArg}}, withTmp(ww, "/s"), "/bin/dsh __landlock-run --ro / --rw /dev/null --tmp /s --rw /tmp --rw /w -- bash -c echo hi"},
		{&Landlock{Launcher: []string{"/bin/dsh", HelperArg}}, Policy{Mode: ReadOnly, WorkspaceRoot: "/tmp/w", TmpDir: "/s"},
			"/bin/dsh __landlock-run --ro / --rw /dev/null --tmp /s --show /tmp/w -- bash -c echo hi"},
	}
	for _, c := range cases {
		if got := strings.Join(c.b.Wrap(c.policy, argv), " "); got != c.want {
			t.Errorf("%s %s:\n got %s\nwant %s", c.b.Name(), c.policy.Mode, got, c.want)
		}
	}
}

func withTmp(p Policy, dir string) Policy {
	p.TmpDir = dir
	return p
}

func TestClassifyDialects(t *testing.T) {
	bw, ll := &Bwrap{}, &Landlock{}
	cases := []struct {
		b      Backend
		code   int
		stderr string
		want   Verdict
	}{
		{bw, 0, "bash: /x: Read-only file system", Verdict{}},
		{bw, -1, "bash: /x: Read-only file system", Verdict{}},
		{bw, 1, "bash: line 1: /x: Read-only file system\n", Verdict{Denied: true, Detail: "bash: line 1: /x: Read-only file system"}},
		{bw, 1, "BWRAP: execvp nope: No such file or directory\n", Verdict{RunnerFailure: true, Detail: "BWRAP: execvp nope: No such file or directory"}},
		{bw, 1, "x: read-only file system\nbwrap: oops", Verdict{RunnerFailure: true, Detail: "x: read-only file system"}},
		{bw, 1, "bash: /x: Permission denied", Verdict{}},
		{ll, 1, "bash: line 1: /x: Permission denied", Verdict{Denied: true, Detail: "bash: line 1: /x: Permission denied"}},
		{ll, 125, "landlock-run: exec: \"nope\": executable file not found in $PATH", Verdict{RunnerFailure: true, Detail: "landlock-run: exec: \"nope\": executable file not found in $PATH"}},
		{ll, 1, "bash: /x: Read-only file system", Verdict{}},
	}
	for _, c := range cases {
		if got := c.b.Classify(c.code, c.stderr); got != c.want {
			t.Errorf("%s Classify(%d, %q) = %+v, want %+v", c.b.Name(), c.code, c.stderr, got, c.want)
		}
	}
}

func TestMarkersAndFacts(t *testing.T) {
	if got := Marker(ReadOnly); got != "[sandbox: file access denied under read-only mode]" {
		t.Fatal(got)
	}
	if got := RunnerFailedMarker(WorkspaceWrite); got != "[sandbox: the sandbox runner itself failed under workspace-write mode — the command did not run; this is a sandbox problem, not a command failure]" {
		t.Fatal(got)
	}
	c := Confined{Mode: ReadOnly, Enforcement: EnforcementFull, Backend: &Bwrap{}}
	facts, _ := json.Marshal(c.Facts(c.Classify(1, "sh: /etc/x: Read-only file system")))
	if string(facts) != `{"mode":"read-only","denied":true,"enforcement":"full"}` {
		t.Fatalf("facts = %s", facts)
	}
	facts, _ = json.Marshal(c.Facts(c.Classify(1, "bwrap: boom")))
	if string(facts) != `{"mode":"read-only","denied":false,"enforcement":"full","runnerFailed":true}` {
		t.Fatalf("facts = %s", facts)
	}
}

func TestExecLine(t *testing.T) {
	got := ExecLine([]string{"bwrap", "--", "bash", "-c", "echo 'hi' there"})
	want := `exec 'bwrap' '--' 'bash' '-c' 'echo '\''hi'\'' there'`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestModes(t *testing.T) {
	if got := Modes(); !slices.Equal(got, []Mode{"read-only", "workspace-write", "danger-full-access"}) {
		t.Fatal(got)
	}
	if _, err := ParseMode("nope"); err == nil {
		t.Fatal("ParseMode accepted nope")
	}
	if m, err := ParseMode("workspace-write"); err != nil || m != WorkspaceWrite {
		t.Fatal(m, err)
	}
}

func TestParseHelperArgs(t *testing.T) {
	h, err := parseHelperArgs([]string{"--ro", "/", "--rw", "/dev/null", "--rw", "/w", "--", "bash", "-c", "x"})
	if err != nil || !slices.Equal(h.ro, []string{"/"}) || !slices.Equal(h.rw, []string{"/dev/null", "/w"}) ||
		!slices.Equal(h.argv, []string{"bash", "-c", "x"}) || h.probe {
		t.Fatalf("h = %+v, err = %v", h, err)
	}
	if h, err := parseHelperArgs([]string{"--probe"}); err != nil || !h.probe {
		t.Fatalf("probe: %+v %v", h, err)
	}
	if h, err := parseHelperArgs([]string{"--probe-ns"}); err != nil || !h.probe || !h.probeNS {
		t.Fatalf("probe-ns: %+v %v", h, err)
	}
	if h, err := parseHelperArgs([]string{"--tmp", "/s/", "--show", "/tmp/w", "--ro", "/", "--", "x"}); err != nil || h.tmp != "/s" || !slices.Equal(h.show, []string{"/tmp/w"}) {
		t.Fatalf("tmp: %+v %v", h, err)
	}
	for _, bad := range [][]string{nil, {"--ro"}, {"--ro", "/"}, {"--bogus"}, {"--ro", "/", "--"}, {"--probe", "--", "x"}, {"--rw", ""},
		{"--tmp"}, {"--tmp", "rel", "--ro", "/", "--", "x"}, {"--show", "rel", "--ro", "/", "--", "x"}} {
		if _, err := parseHelperArgs(bad); err == nil {
			t.Errorf("parseHelperArgs(%q) accepted", bad)
		}
	}
}

// The containment's argv: network off, protected paths bound read-only,
// hidden directories under an empty tmpfs and files under /dev/null; a
// path beneath a /tmp the sandbox replaces is left out.
func TestWrapContainment(t *testing.T) {
	dir := t.TempDir() // beneath /tmp: only visible through a root
	ssh, netrc := filepath.Join(dir, "ssh"), filepath.Join(dir, "netrc")
	if err := os.Mkdir(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(netrc, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := Policy{Mode: WorkspaceWrite, WorkspaceRoot: "/w", TmpDir: "/s", NoNetwork: true,
		Hidden: []string{ssh, netrc}, Protected: []string{"/w/.git/hooks", "/w/.git/config"}}
	got := strings.Join((&Bwrap{}).Wrap(p, []string{"true"}), " ")
	want := "bwrap --ro-bind / / --dev /dev --proc /proc --die-with-parent --unshare-pid --new-session --cap-drop ALL " +
		"--bind /s /tmp --bind /w /w --unshare-net --ro-bind /w/.git/hooks /w/.git/hooks --ro-bind /w/.git/config /w/.git/config " +
		"--setenv TMPDIR /tmp -- true"
	if got != want {
		t.Errorf("bwrap, hidden beneath a replaced /tmp:\n got %s\nwant %s", got, want)
	}
	p.WorkspaceRoot = dir // now a root shows them
	got = strings.Join((&Bwrap{}).Wrap(p, []string{"true"}), " ")
	// A hidden directory is one tmpfs, mounted after every bind.
	if part := " --ro-bind /dev/null " + netrc + " --tmpfs " + ssh + " --setenv "; !strings.Contains(got, part) {
		t.Errorf("bwrap: %q lacks %q", got, part)
	}
	got = strings.Join((&Landlock{Launcher: []string{"/bin/dsh", HelperArg}}).Wrap(p, []string{"true"}), " ")
	want = "/bin/dsh __landlock-run --ro / --rw /dev/null --tmp /s --rw /tmp --rw " + dir + " --no-net " +
		"--protect /w/.git/hooks --protect /w/.git/config --hide " + ssh + " --hide " + netrc + " -- true"
	if got != want {
		t.Errorf("landlock:\n got %s\nwant %s", got, want)
	}
	// The zero containment is upstream's argv, unchanged.
	if got := (&Bwrap{}).Wrap(Policy{Mode: ReadOnly}, []string{"true"}); slices.Contains(got, "--unshare-net") {
		t.Errorf("bwrap without containment: %q", got)
	}
}
