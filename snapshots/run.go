package snapshots

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/agent/llm/replay"
	"github.com/dsh-acp/dsh-acp/capabilities/bash"
	"github.com/dsh-acp/dsh-acp/composition"
	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
)

// Launched is a running agent under test.
type Launched struct {
	Stdin  io.WriteCloser
	Stdout io.Reader
	// Wait blocks until the agent exits after its stdin closed.
	Wait func() error
	// Stderr returns what the agent logged (for failure reports).
	Stderr func() string
}

// Launcher starts the agent for one scenario run with cwd as its working
// directory, sessionsRoot as its store and home as the user's home
// directory (seeded from the scenario's home/, so user-level files such as
// ~/.claude/settings.json are the scenario's, never the machine's).
type Launcher interface {
	Launch(ctx context.Context, sc *Scenario, cwd, sessionsRoot, home string) (*Launched, error)
}

// homeEnv is the environment of a run whose home is home: the variables
// that locate user files point into it (or are cleared, so their defaults
// under HOME apply).
func homeEnv(home string) []string {
	return []string{"HOME=" + home, "XDG_CONFIG_HOME=", "XDG_STATE_HOME=", "CLAUDE_CONFIG_DIR=", "CODEX_HOME="}
}

// getenvWith returns a getenv that reads env first, then the process's.
func getenvWith(env []string) func(string) string {
	return func(k string) string {
		for _, kv := range env {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return os.Getenv(k)
	}
}

// InProcess runs the agent inside this process over pipes. The process
// must host the Landlock helper (sandbox.MaybeRunHelper in main or
// TestMain) for the Landlock backend to work.
type InProcess struct {
	// Version is advertised in initialize.
	Version string
	// Confiner confines bash commands; nil means sandbox.NewDefaultProvider.
	Confiner bash.Confiner
}

// Launch implements Launcher.
func (p InProcess) Launch(ctx context.Context, sc *Scenario, cwd, sessionsRoot, home string) (*Launched, error) {
	comp, err := composition.Load(sc.Meta.Composition)
	if err != nil {
		return nil, err
	}
	override := ""
	if _, err := os.Stat(sc.File("replay.override.json")); err == nil {
		override = sc.File("replay.override.json")
	}
	provider, err := replay.New(sc.File("session.jsonl"), override, sc.ChildFiles())
	if err != nil {
		return nil, err
	}
	store, err := jsonl.Open(sessionsRoot)
	if err != nil {
		return nil, err
	}
	confiner := p.Confiner
	if confiner == nil {
		dp, err := sandbox.NewDefaultProvider()
		if err != nil {
			return nil, err
		}
		confiner = dp
	}
	var stderr syncBuffer
	log := zerolog.New(&stderr).Level(zerolog.InfoLevel)
	srv := comp.NewServer(composition.ServerOptions{Provider: provider, Store: store, Log: log, Version: p.Version, LaunchDir: cwd, Confiner: confiner,
		Getenv: getenvWith(homeEnv(home)), CheckDerivation: true})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(context.WithoutCancel(ctx), inR, outW)
		_ = store.Close()
		_ = outW.Close()
		done <- err
	}()
	return &Launched{Stdin: inW, Stdout: outR, Wait: func() error { return <-done }, Stderr: stderr.String}, nil
}

// Subprocess runs a dsh-acp binary over real stdio, the way an editor does.
type Subprocess struct {
	// Binary is the path of the dsh-acp executable.
	Binary string
}

// Launch implements Launcher.
func (p Subprocess) Launch(ctx context.Context, sc *Scenario, cwd, sessionsRoot, home string) (*Launched, error) {
	args := []string{"--composition", sc.Meta.Composition, "--sessions-root", sessionsRoot, "--model-replay", sc.File("session.jsonl")}
	if _, err := os.Stat(sc.File("replay.override.json")); err == nil {
		args = append(args, "--model-replay-override", sc.File("replay.override.json"))
	}
	for _, c := range sc.ChildFiles() {
		args = append(args, "--model-replay-child", c)
	}
	cmd := exec.Command(p.Binary, args...)
	cmd.Dir = cwd
	cmd.Env = append(append(os.Environ(), "DSH_SNAPSHOT=replay"), homeEnv(home)...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", p.Binary, err)
	}
	return &Launched{Stdin: stdin, Stdout: stdout, Wait: cmd.Wait, Stderr: stderr.String}, nil
}

// Result is the outcome of one scenario.
type Result struct {
	Name   string
	Passed bool
	// Message says why it failed.
	Message string
	// Diff is a unified diff of the first mismatch.
	Diff string
	// Transcript is the readable conversation (with Options.Transcript).
	Transcript string
	// Timeline is every line exchanged with the agent, in order.
	Timeline []Message
	// Logs are the session logs the agent wrote (harvest order).
	Logs [][]byte
	// MCPCalls are the tools/call requests the scenario's MCP servers
	// received, in order.
	MCPCalls []MCPCall
	// FSCalls and TerminalCalls are the fs/* and terminal/* requests the
	// scripted client served (with Input.Client), in order; Terminals are
	// the terminals it created (their commands, output and exit).
	FSCalls       []acpclient.FSCall
	TerminalCalls []acpclient.TerminalCall
	Terminals     []*acpclient.Terminal
}

// Options tune a run.
type Options struct {
	// Timeout bounds one scenario (default 60s).
	Timeout time.Duration
	// Update rewrites the goldens of our own scenarios instead of comparing.
	Update bool
	// Transcript renders each run as a readable conversation.
	Transcript bool
}

// Run plays one scenario and compares what the agent wrote.
func Run(ctx context.Context, sc *Scenario, l Launcher, o Options) Result {
	res := Result{Name: sc.Name()}
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if o.Update && !sc.Own {
		res.Message = "refusing --update on a scenario of the upstream corpus (read-only); only our own scenarios (with scenario.json) are updated"
		return res
	}
	cwd, err := os.MkdirTemp("", "acp-snap-cwd-")
	if err != nil {
		res.Message = err.Error()
		return res
	}
	defer os.RemoveAll(cwd)
	root, err := os.MkdirTemp("", "acp-snap-sessions-")
	if err != nil {
		res.Message = err.Error()
		return res
	}
	defer os.RemoveAll(root)
	home, err := os.MkdirTemp("", "acp-snap-home-")
	if err != nil {
		res.Message = err.Error()
		return res
	}
	defer os.RemoveAll(home)
	if err := copyTree(sc.File("home"), home); err != nil {
		res.Message = "seed home: " + err.Error()
		return res
	}
	if err := copyTree(sc.File("workspace"), cwd); err != nil {
		res.Message = "seed workspace: " + err.Error()
		return res
	}

	var servers *mcpServers
	if len(sc.Meta.MCPServers) > 0 {
		if servers, err = startMCP(sc.Meta.MCPServers); err != nil {
			res.Message = "scenario.json: " + err.Error()
			return res
		}
		defer servers.close()
	}
	run, err := l.Launch(ctx, sc, cwd, root, home)
	if err != nil {
		res.Message = "launch agent: " + err.Error()
		return res
	}
	c := newClient(run.Stdin, run.Stdout, sc.Input, clientSetup{cwd: cwd, env: terminalEnv(home), servers: servers})
	stepErr := c.runSteps(ctx, cwd, sc.Input.Steps)
	_ = run.Stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	select {
	case err := <-exited:
		if err != nil && stepErr == nil {
			stepErr = fmt.Errorf("agent exited with %w", err)
		}
	case <-time.After(10 * time.Second):
		if stepErr == nil {
			stepErr = errors.New("agent did not exit within 10s of stdin closing")
		}
	}
	select {
	case <-c.conn.Done():
	case <-time.After(2 * time.Second):
	}
	res.Timeline = c.timeline()
	if c.fs != nil {
		res.FSCalls = c.fs.Calls()
	}
	if c.terms != nil {
		res.TerminalCalls, res.Terminals = c.terms.Calls(), c.terms.Created()
	}
	if o.Transcript {
		res.Transcript = strings.ReplaceAll(Transcript(res.Timeline), cwd+"/", "")
	}
	if stepErr != nil {
		res.Message = stepErr.Error() + stderrTail(run.Stderr())
		return res
	}
	logs, err := harvest(root)
	if err != nil {
		res.Message = "harvest logs: " + err.Error()
		return res
	}
	// The run's scratch home appears in paths the agent shows (spill files
	// under its state dir): it becomes {{home}}, like the cwd.
	for i := range logs {
		logs[i] = servers.scrub(scrubHome(logs[i], home))
	}
	res.Logs = logs
	c.mu.Lock()
	ids := append([]string(nil), c.sessionIDs...)
	c.mu.Unlock()
	for _, lg := range logs {
		id, _ := LogIdentity(lg)
		ids = append(ids, id)
	}
	res.MCPCalls = servers.received()
	got, err := NormalizeStdout(servers.scrub(scrubHome(c.recorded(), home)), cwd, ids)
	if err != nil {
		res.Message = err.Error()
		return res
	}
	if o.Update {
		u := update(sc, got, logs, cwd, ids)
		u.Transcript, u.Timeline, u.Logs = res.Transcript, res.Timeline, res.Logs
		u.MCPCalls, u.FSCalls, u.TerminalCalls, u.Terminals = res.MCPCalls, res.FSCalls, res.TerminalCalls, res.Terminals
		return u
	}
	goldenRaw, err := os.ReadFile(sc.File("stdout.golden.jsonl"))
	if err != nil {
		res.Message = err.Error()
		return res
	}
	want, err := NormalizeStdout(goldenRaw, "", nil)
	if err != nil {
		res.Message = "golden: " + err.Error()
		return res
	}
	if d := UnifiedDiff("stdout.golden.jsonl", "stdout (normalized)", want, got); d != "" {
		res.Message = "stdout differs from the golden"
		res.Diff = d
		return res
	}
	if sc.ComparesLog() {
		if msg, d := compareLogs(sc, logs, cwd, ids); msg != "" {
			res.Message, res.Diff = msg, d
			return res
		}
	}
	res.Passed = true
	return res
}

// compareLogs compares harvested logs with the scenario's fixtures.
func compareLogs(sc *Scenario, logs [][]byte, cwd string, ids []string) (string, string) {
	if len(logs) != 1+sc.Meta.ChildSessions {
		return fmt.Sprintf("expected %d session log(s), the agent wrote %d", 1+sc.Meta.ChildSessions, len(logs)), ""
	}
	for i, lg := range logs {
		name := "session.jsonl"
		if i > 0 {
			name = fmt.Sprintf("session.%d.jsonl", i)
		}
		fixture, err := os.ReadFile(sc.File(name))
		if err != nil {
			return err.Error(), ""
		}
		fid, fcwd := LogIdentity(fixture)
		want, err := NormalizeLog(fixture, fcwd, []string{fid}, true)
		if err != nil {
			return name + ": " + err.Error(), ""
		}
		got, err := NormalizeLog(lg, cwd, ids, true)
		if err != nil {
			return "harvested log: " + err.Error(), ""
		}
		if d := UnifiedDiff(name, "session log (normalized)", want, got); d != "" {
			return name + " differs from the log the agent wrote", d
		}
	}
	return "", ""
}

// update rewrites an own scenario's goldens from this run.
func update(sc *Scenario, stdout []byte, logs [][]byte, cwd string, ids []string) Result {
	res := Result{Name: sc.Name(), Passed: true, Message: "updated"}
	if err := os.WriteFile(sc.File("stdout.golden.jsonl"), stdout, 0o644); err != nil {
		return Result{Name: sc.Name(), Message: err.Error()}
	}
	if sc.ComparesLog() {
		for i, lg := range logs {
			name := "session.jsonl"
			if i > 0 {
				name = fmt.Sprintf("session.%d.jsonl", i)
			}
			n, err := NormalizeLog(lg, cwd, ids, false)
			if err != nil {
				return Result{Name: sc.Name(), Message: err.Error()}
			}
			if err := os.WriteFile(sc.File(name), n, 0o644); err != nil {
				return Result{Name: sc.Name(), Message: err.Error()}
			}
		}
	}
	return res
}

// harvest reads every *.jsonl under root: the primary log (no
// parentSession) first, then children by createdAt, ties by id.
func harvest(root string) ([][]byte, error) {
	type entry struct {
		data      []byte
		child     bool
		createdAt int64
		id        string
	}
	var entries []entry
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		first := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			first = data[:i]
		}
		var h struct {
			ID            string `json:"id"`
			CreatedAt     int64  `json:"createdAt"`
			ParentSession string `json:"parentSession"`
		}
		if err := json.Unmarshal(first, &h); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		entries = append(entries, entry{data, h.ParentSession != "", h.CreatedAt, h.ID})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.child != b.child {
			return !a.child
		}
		if a.createdAt != b.createdAt {
			return a.createdAt < b.createdAt
		}
		return a.id < b.id
	})
	out := make([][]byte, len(entries))
	for i, e := range entries {
		out[i] = e.data
	}
	return out, nil
}

// copyTree copies src (if it exists) into dst recursively.
func copyTree(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
}

func stderrTail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "\nagent stderr (last lines):\n  " + strings.Join(lines, "\n  ")
}

// syncBuffer is a goroutine-safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// HomeToken stands for the run's scratch home directory in goldens.
const HomeToken = "{{home}}"

// scrubHome replaces the scratch home directory's path in raw output (a
// temporary directory's name needs no JSON escaping).
func scrubHome(raw []byte, home string) []byte {
	if home == "" {
		return raw
	}
	return bytes.ReplaceAll(raw, []byte(home), []byte(HomeToken))
}
