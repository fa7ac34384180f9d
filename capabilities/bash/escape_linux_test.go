//go:build linux

package bash

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
)

// TestMain lets the test binary double as the Landlock helper (and as the
// agent of the escape suite, see agentEnv).
func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	if os.Getenv("GORACE") == "" {
		// A race-enabled binary lingers a second at exit; the helpers this
		// binary is re-executed as need not.
		_ = os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

// requireEnv names the backends that must be usable (CI sets it): then a
// backend that is not fails the suite instead of skipping it.
const requireEnv = "DSH_SANDBOX_REQUIRE"

// suiteBackend is a real sandbox backend the escape suite attacks through
// the bash tool.
type suiteBackend struct {
	name    string // as reported; the backend's Name is what requireEnv lists
	backend sandbox.Backend
}

var (
	backendsOnce sync.Once
	backendsList []suiteBackend
)

// suiteBackends returns bwrap, the Landlock helper (in namespaces where the
// host allows them) and the Landlock helper forced to run as a subreaper.
func suiteBackends(t *testing.T) []suiteBackend {
	t.Helper()
	backendsOnce.Do(func() {
		launcher, err := sandbox.HelperLauncher()
		if err != nil {
			panic(err)
		}
		backendsList = []suiteBackend{
			{"bwrap", &sandbox.Bwrap{}},
			{"landlock", &sandbox.Landlock{Launcher: launcher}},
			{"landlock-subreaper", &sandbox.Landlock{Launcher: launcher, NoNamespaces: true}},
		}
	})
	return backendsList
}

var providers sync.Map // sandbox.Backend → *sandbox.Provider

// providerFor returns the one provider of b, so that b is probed once.
func providerFor(b sandbox.Backend) *sandbox.Provider {
	p, _ := providers.LoadOrStore(b, sandbox.NewProvider(b))
	return p.(*sandbox.Provider)
}

// requireUsable probes b once; an unusable backend skips loudly, or fails
// when requireEnv lists it.
func requireUsable(t *testing.T, b sandbox.Backend) {
	t.Helper()
	if _, _, err := providerFor(b).Select(context.Background(), sandbox.ReadOnly); err != nil {
		var u *sandbox.UnavailableError
		if errors.As(err, &u) && len(u.Probes) > 0 {
			err = errors.Join(u.Probes...)
		}
		if slices.Contains(strings.Split(os.Getenv(requireEnv), ","), b.Name()) {
			t.Fatalf("%s backend is required (%s) but unusable: %v", b.Name(), requireEnv, err)
		}
		t.Skipf("SANDBOX NOT TESTED: %s backend is unusable on this host, its escape suite is SKIPPED: %v", b.Name(), err)
	}
}

// escapeLab is a workspace and the places outside it an attack aims at,
// all outside /tmp, plus the agent's fake secret.
type escapeLab struct {
	t                                *testing.T
	base, ws, outside, home, tmpBase string
	key, id                          string
	confiner                         *sandbox.Provider
	mode                             string
	sessions                         int
}

func newEscapeLab(t *testing.T, b sandbox.Backend, mode, key string) *escapeLab {
	t.Helper()
	base := suiteBase(t)
	confiner := sandbox.NewProvider()
	if b != nil {
		confiner = providerFor(b)
	}
	l := &escapeLab{t: t, base: base, key: key, mode: mode, confiner: confiner,
		ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside"), home: filepath.Join(base, "home"),
		tmpBase: filepath.Join(base, "tmpbase"), id: fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())}
	for _, d := range []string{l.ws, l.outside, l.home, l.tmpBase} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, os.Symlink(l.outside, filepath.Join(l.ws, "premade")))
	return l
}

// baseEnv names the directory a re-executed agent creates its labs in (its
// parent removes it: an agent killed with SIGKILL cleans up nothing).
const baseEnv = "DSH_ESCAPE_BASE"

// suiteBase is a fresh directory outside /tmp.
func suiteBase(t *testing.T) string {
	t.Helper()
	for _, cand := range []string{os.Getenv(baseEnv), "/var/tmp", "."} {
		if cand == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(cand)
		if err != nil || real == "/tmp" || strings.HasPrefix(real, "/tmp/") {
			continue
		}
		if d, err := os.MkdirTemp(real, "dsh-escape-"); err == nil {
			require.NoError(t, os.Chmod(d, 0o755))
			t.Cleanup(func() { _ = os.RemoveAll(d) })
			return d
		}
	}
	t.Fatal("no writable directory outside /tmp")
	return ""
}

// labSession is one agent session: its own bash tool family.
type labSession struct {
	reg *capabilities.Registry
	env testEnv
}

// session opens a new agent session whose commands run under the lab's
// backend and mode, with a private /tmp.
func (l *escapeLab) session() *labSession {
	l.sessions++
	id := "session-" + strconv.Itoa(l.sessions)
	home := l.home
	opts := Options{
		SpillDir:  l.base,
		KillGrace: 300 * time.Millisecond,
		Tasks:     NewTasks(nil),
		Environ: func() []string {
			env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "HOME=") })
			return append(env, "HOME="+home)
		},
		Sandbox: &Sandboxing{
			Confiner:   l.confiner,
			Root:       func(*capabilities.Call) string { return l.ws },
			Mode:       func(*capabilities.Call) string { return l.mode },
			SessionTmp: true,
			TmpBase:    l.tmpBase,
		},
	}
	s := &labSession{
		reg: capabilities.NewRegistry(New(opts)...),
		env: testEnv{cwd: l.ws, log: session.NewLog(session.Header{ID: id, Cwd: l.ws}, func() int64 { return 0 }, nil)},
	}
	l.t.Cleanup(func() { _ = s.close() })
	return s
}

// bash runs command in the foreground and returns the result text
// (errors included).
func (s *labSession) bash(t *testing.T, command string, background bool) string {
	t.Helper()
	args := map[string]any{"command": command, "description": "escape attempt"}
	if background {
		args["run_in_background"] = true
	}
	o := s.reg.Execute(context.Background(), s.env, "call", "bash", string(jsonx.MustMarshal(args)))
	require.Len(t, o.Content, 1)
	return o.Content[0].Text
}

func (s *labSession) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return s.reg.Close(ctx)
}

// verdict is what one attack achieved.
type verdict struct {
	escaped, keyRead, orphaned bool
	detail                     string
}

// attack is one attempt to break out of the sandbox.
type attack struct {
	name string
	run  func(t *testing.T, l *escapeLab, s *labSession) verdict
}

// writeAttack runs script and reports an escape when target exists after.
func writeAttack(name, script string, target func(l *escapeLab) string) attack {
	return attack{name, func(t *testing.T, l *escapeLab, s *labSession) verdict {
		out := s.bash(t, l.expand(script), false)
		p := target(l)
		_, err := os.Lstat(p)
		if err == nil && strings.HasPrefix(p, "/etc/") {
			_ = os.Remove(p)
		}
		return verdict{escaped: err == nil, detail: out}
	}}
}

// keyAttack runs script and reports a key read when the output holds the
// agent's secret.
func keyAttack(name, script string) attack {
	return attack{name, func(t *testing.T, l *escapeLab, s *labSession) verdict {
		out := s.bash(t, l.expand(script), false)
		return verdict{keyRead: strings.Contains(out, l.key), detail: out}
	}}
}

// expand fills in the lab's places: {O} outside, {W} workspace, {ID} the
// lab's unique id, {AGENT} the agent's pid.
func (l *escapeLab) expand(s string) string {
	return strings.NewReplacer("{O}", l.outside, "{W}", l.ws, "{ID}", l.id, "{AGENT}", strconv.Itoa(os.Getpid())).Replace(s)
}

func outsideFile(name string) func(*escapeLab) string {
	return func(l *escapeLab) string { return filepath.Join(l.outside, name) }
}

// orphanScript starts a `setsid nohup` process and a double-forked one,
// each with a marker argv; tail ends the command.
func orphanScript(m1, m2, tail string) string {
	return "setsid nohup bash -c 'exec -a " + m1 + " sleep 300' >/dev/null 2>&1 & " +
		"( (exec -a " + m2 + " sleep 300 >/dev/null 2>&1 &) & ); " + tail
}

// livePids returns the host processes whose argv[0] is marker.
func livePids(marker string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(b), marker+"\x00") && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// gone waits a little for the markers' processes to die and reports the
// survivors as "marker:pid" (killing them, so that a failed run leaves
// nothing behind).
func gone(markers ...string) []string {
	var left []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		left = left[:0]
		for _, m := range markers {
			for _, p := range livePids(m) {
				left = append(left, m+":"+strconv.Itoa(p))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, m := range markers {
		for _, p := range livePids(m) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	return left
}

// attacks is the escape suite.
var attacks = []attack{
	writeAttack("write $HOME", `echo x > "$HOME/pwned-{ID}"`, func(l *escapeLab) string { return filepath.Join(l.home, "pwned-"+l.id) }),
	writeAttack("write /etc", `echo x > /etc/dsh-pwned-{ID}`, func(l *escapeLab) string { return "/etc/dsh-pwned-" + l.id }),
	writeAttack("write an outside dir", `echo x > {O}/direct`, outsideFile("direct")),
	writeAttack("write through a workspace symlink", `echo x > premade/viasym`, outsideFile("viasym")),
	writeAttack("write through a symlink it makes", `ln -s {O} made; echo x > made/own`, outsideFile("own")),
	writeAttack("write via /proc/self/root", `echo x > /proc/self/root{O}/self`, outsideFile("self")),
	writeAttack("write via /proc/$PPID/root", `echo x > /proc/$PPID/root{O}/ppid`, outsideFile("ppid")),
	writeAttack("write via /proc/*/root", `for p in /proc/[0-9]*; do echo x > "$p/root{O}/star"; done 2>/dev/null; true`, outsideFile("star")),
	writeAttack("remount / read-write", `mount -o remount,rw /; echo x > {O}/remount`, outsideFile("remount")),
	writeAttack("bind-mount outside over the workspace", `mount --bind {O} {W}; echo x > {W}/bound`, outsideFile("bound")),
	writeAttack("unshare a user and mount namespace", `unshare -Urm sh -c 'mount -o remount,rw /; mount --bind {O} {W}; echo x > {O}/unshare; echo x > {W}/unshare'`, outsideFile("unshare")),
	{"create and use a device node", func(t *testing.T, l *escapeLab, s *labSession) verdict {
		out := s.bash(t, l.expand(`mknod {W}/null2 c 1 3; echo x > {W}/null2`), false)
		st, err := os.Lstat(filepath.Join(l.ws, "null2"))
		return verdict{escaped: err == nil && st.Mode()&os.ModeDevice != 0, detail: out}
	}},
	writeAttack("write the host's /tmp", `echo x > /tmp/dsh-host-{ID}`, func(l *escapeLab) string { return "/tmp/dsh-host-" + l.id }),
	keyAttack("read /proc/*/environ", `cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep DEEPSEEK`),
	keyAttack("read /proc/$PPID/environ", `tr '\0' '\n' < /proc/$PPID/environ`),
	keyAttack("read the agent's /proc/<pid>/environ", `tr '\0' '\n' < /proc/{AGENT}/environ`),
	keyAttack("read its own environment", `env; echo "key=$DEEPSEEK_API_KEY"`),
	{"orphans of a foreground call", func(t *testing.T, l *escapeLab, s *labSession) verdict {
		m1, m2 := "dsh-orphan-fg1-"+l.id, "dsh-orphan-fg2-"+l.id
		out := s.bash(t, orphanScript(m1, m2, "sleep 0.3; echo started"), false)
		left := gone(m1, m2)
		return verdict{orphaned: len(left) > 0, detail: fmt.Sprintf("%s; survivors %v", out, left)}
	}},
	{"orphans of a background task, session closed", func(t *testing.T, l *escapeLab, _ *labSession) verdict {
		s := l.session()
		m1, m2, m3 := "dsh-orphan-bg1-"+l.id, "dsh-orphan-bg2-"+l.id, "dsh-orphan-bg3-"+l.id
		out := s.bash(t, orphanScript(m1, m2, "exec -a "+m3+" sleep 300"), true)
		require.Eventually(t, func() bool {
			return len(livePids(m1)) == 1 && len(livePids(m2)) == 1 && len(livePids(m3)) == 1
		}, 10*time.Second, 20*time.Millisecond, "the task's processes never started: %s", out)
		require.NoError(t, s.close())
		left := gone(m1, m2, m3)
		return verdict{orphaned: len(left) > 0, detail: fmt.Sprintf("%s; survivors %v", out, left)}
	}},
	{"/tmp shared with another session", func(t *testing.T, l *escapeLab, s *labSession) verdict {
		s.bash(t, "echo mine-{ID} > /tmp/shared; true", false)
		other := l.session()
		out := other.bash(t, l.expand(`cat /tmp/shared "$TMPDIR/shared" 2>/dev/null; true`), false)
		return verdict{escaped: strings.Contains(out, "mine-"+l.id), detail: out}
	}},
}

// agentEnv marks the test binary re-executed to play the agent: its
// initial environment (what /proc/<pid>/environ shows, which os.Setenv
// does not change) holds a unique fake DEEPSEEK_API_KEY.
const agentEnv = "DSH_ESCAPE_AGENT"

// TestEscapeSuite attacks every backend in both confined modes through the
// real bash tool, from an agent process whose environment holds a unique
// fake DEEPSEEK_API_KEY: no attack may write outside the policy, read the
// key or leave a process running.
func TestEscapeSuite(t *testing.T) {
	if os.Getenv(agentEnv) != "" {
		runEscapeSuite(t, os.Getenv("DEEPSEEK_API_KEY"))
		return
	}
	runAsAgent(t, "TestEscapeSuite", nil)
}

// TestEscapeSuiteAsNobody runs the suite again from an agent that is not
// root (uid 65534): bwrap then needs unprivileged user namespaces, and the
// Landlock helper runs in a user namespace or as a subreaper.
func TestEscapeSuiteAsNobody(t *testing.T) {
	if os.Getenv(agentEnv) != "" {
		t.Skip("runs in the parent test process only")
	}
	if os.Geteuid() != 0 {
		t.Skip("already not root: TestEscapeSuite ran as uid " + strconv.Itoa(os.Geteuid()))
	}
	runAsAgent(t, "TestEscapeSuite", &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}})
}

// TestEscapeSuiteControl runs attacks of each kind unconfined, where they
// must succeed: the suite's detectors see escapes, key reads and orphans.
// It also shows what Close still kills there (the double fork) and what it
// cannot (a process that called setsid itself).
func TestEscapeSuiteControl(t *testing.T) {
	if os.Getenv(agentEnv) == "" {
		runAsAgent(t, "TestEscapeSuiteControl", nil)
		return
	}
	key := os.Getenv("DEEPSEEK_API_KEY")
	l := newEscapeLab(t, nil, "danger-full-access", key)
	s := l.session()
	byName := func(n string) attack {
		i := slices.IndexFunc(attacks, func(a attack) bool { return a.name == n })
		require.GreaterOrEqual(t, i, 0, n)
		return attacks[i]
	}
	require.True(t, byName("write an outside dir").run(t, l, s).escaped)
	require.True(t, byName("write through a workspace symlink").run(t, l, s).escaped)
	require.True(t, byName("read the agent's /proc/<pid>/environ").run(t, l, s).keyRead)
	require.False(t, byName("read its own environment").run(t, l, s).keyRead, "the key is filtered even unconfined")

	m1, m2 := "dsh-control-setsid-"+l.id, "dsh-control-fork-"+l.id
	s.bash(t, orphanScript(m1, m2, "true"), false)
	require.Eventually(t, func() bool { return len(livePids(m1)) == 1 && len(livePids(m2)) == 1 }, 5*time.Second, 20*time.Millisecond,
		"unconfined orphans outlive their call")
	require.NoError(t, s.close())
	require.Empty(t, gone(m2), "Close kills what stayed in the command's session")
	left := livePids(m1)
	for _, p := range left {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	require.NotEmpty(t, left, "a process that called setsid is not attributable (documented in tracker)")
}

// runEscapeSuite is the suite proper, in the agent process.
func runEscapeSuite(t *testing.T, key string) {
	require.NotEmpty(t, key)
	who := "root"
	if os.Geteuid() != 0 {
		who = "uid " + strconv.Itoa(os.Geteuid())
	}
	for _, sb := range suiteBackends(t) {
		for _, mode := range []string{"read-only", "workspace-write"} {
			t.Run(sb.name+"/"+mode, func(t *testing.T) {
				requireUsable(t, sb.backend)
				l := newEscapeLab(t, sb.backend, mode, key)
				s := l.session()
				var escapes, reads, orphans int
				for _, a := range attacks {
					v := a.run(t, l, s)
					if v.escaped || v.keyRead || v.orphaned {
						t.Errorf("%s: escaped=%v keyRead=%v orphaned=%v: %s", a.name, v.escaped, v.keyRead, v.orphaned, v.detail)
					}
					escapes, reads, orphans = escapes+b2i(v.escaped), reads+b2i(v.keyRead), orphans+b2i(v.orphaned)
				}
				t.Logf("escape-suite %s %s (%s): %d attacks, %d escapes, %d key reads, %d orphans",
					sb.name, mode, who, len(attacks), escapes, reads, orphans)
			})
		}
	}
}

// runAsAgent re-executes the test binary to run test as the agent, with
// a unique fake key in its environment, as cred when given, and relays
// its summary lines.
func runAsAgent(t *testing.T, test string, cred *syscall.Credential) {
	t.Helper()
	bin, err := os.Executable()
	require.NoError(t, err)
	dir := suiteBase(t)
	env := append(os.Environ(), agentEnv+"=1", fmt.Sprintf("DEEPSEEK_API_KEY=sk-escape-%d", time.Now().UnixNano()))
	if cred != nil {
		// The binary sits in a private build directory: copy it where the
		// other user can run it.
		b, err := os.ReadFile(bin)
		require.NoError(t, err)
		bin = filepath.Join(dir, "agent.test")
		require.NoError(t, os.WriteFile(bin, b, 0o755))
		require.NoError(t, os.Chown(dir, int(cred.Uid), int(cred.Gid)))
		if !userNamespaces() {
			t.Logf("unprivileged user namespaces are disabled on this host: bwrap cannot run as uid %d and is skipped there", cred.Uid)
			env = append(env, requireEnv+"="+strings.ReplaceAll(strings.ReplaceAll(os.Getenv(requireEnv), "bwrap", ""), ",,", ","))
		}
	}
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.v", "-test.count=1", "-test.timeout=10m")
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	for line := range strings.SplitSeq(string(out), "\n") {
		if i := strings.Index(line, "escape-suite "); i >= 0 {
			t.Log(line[i:])
		} else if strings.Contains(line, "SKIP") && strings.Contains(line, "SANDBOX NOT TESTED") {
			t.Log(strings.TrimSpace(line))
		}
	}
	require.NoError(t, err, "the agent process failed:\n%s", out)
	require.NotContains(t, string(out), "no tests to run")
}

// userNamespaces reports whether an unprivileged process may create a user
// namespace here.
func userNamespaces() bool {
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return false
	}
	b, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	return err == nil && strings.TrimSpace(string(b)) != "0"
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
