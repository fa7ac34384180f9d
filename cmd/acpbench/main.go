// Command acpbench measures ACP agents side by side against a local mock
// LLM (bench/mockllm, started in-process on loopback).
//
// For every agent it repeats, after warm-up runs: spawn the agent,
// initialize, session/new, one text turn, one tool turn that creates a
// file (answering session/request_permission and fs/* like an editor),
// a turn cancelled mid-stream, and a second session/new listing three real
// MCP servers (-no-mcp skips it). It reports the median and spread of
// each timing, the RSS of the agent's process tree and the bytes it wrote
// to stdout, with ratios to the first agent; then a streaming stress of
// one long reply. Output is a table (text or Markdown) and JSON.
//
//	acpbench -n 10 -agent dsh-acp=bin/dsh-acp \
//	    -agent 'claude=claude-code-acp' -json bench.json
//
// Agents reach the mock through environment variables set for them
// (DEEPSEEK_BASE_URL, OPENAI_BASE_URL, ANTHROPIC_BASE_URL,
// GOOGLE_GEMINI_BASE_URL, their API keys, and a private HOME); {{mock}}
// in -agent and -env values is the agent's mock base URL and {{home}} its
// HOME. See docs/performance.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-acp/dsh-acp/bench/mockllm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// config is the parsed command line.
type config struct {
	agents       listFlag
	envs         listFlag
	tools        listFlag
	n, warmup    int
	stress       int
	stressRuns   int
	stressAgents string
	timeout      time.Duration
	format       string
	jsonPath     string
	home         string
	inheritHome  bool
	quiet        bool
	cpuProfile   string
	dump         string
	trace        string
	noMCP        bool
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("acpbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&c.agents, "agent", "agent to measure, `NAME=COMMAND [ARGS…]` (repeatable; the first is the baseline; default dsh-acp=bin/dsh-acp)")
	fs.Var(&c.envs, "env", "extra environment `[NAME:]KEY=VALUE` for all agents or agent NAME (repeatable)")
	fs.Var(&c.tools, "tool", "mock tool-call script `[NAME/]DIALECT=TOOL:{json}` (repeatable; see bench/mockllm)")
	fs.IntVar(&c.n, "n", 10, "measured iterations per agent")
	fs.IntVar(&c.warmup, "warmup", 1, "discarded warm-up iterations per agent")
	fs.IntVar(&c.stress, "stress", 100_000, "chunks of the streaming stress reply (0: no stress)")
	fs.IntVar(&c.stressRuns, "stress-runs", 3, "stress runs per agent (after one warm-up)")
	fs.StringVar(&c.stressAgents, "stress-agents", "", "comma-separated agents to stress (default: the first)")
	fs.DurationVar(&c.timeout, "timeout", 60*time.Second, "limit of each request and turn")
	fs.StringVar(&c.format, "format", "text", "stdout format: text, markdown or json")
	fs.StringVar(&c.jsonPath, "json", "", "also write the JSON report to this file")
	fs.StringVar(&c.home, "home", "", "directory for the agents' HOMEs and workspaces (default: a temporary one, removed)")
	fs.BoolVar(&c.inheritHome, "inherit-home", false, "keep the caller's HOME and XDG directories (for agents that need a login)")
	fs.BoolVar(&c.quiet, "q", false, "no progress on stderr")
	fs.StringVar(&c.dump, "dump", "", "write every request the mock receives to this directory")
	fs.StringVar(&c.trace, "trace", "", "write a copy of each agent run's stdout to this directory")
	fs.BoolVar(&c.noMCP, "no-mcp", false, "skip the MCP case (a second session/new listing three real MCP servers)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write acpbench's own CPU profile (client and mock) to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if len(c.agents) == 0 {
		c.agents = listFlag{"dsh-acp=bin/dsh-acp"}
	}
	switch c.format {
	case "text", "markdown", "json":
	default:
		return nil, fmt.Errorf("-format %q: want text, markdown or json", c.format)
	}
	if c.n < 1 || c.warmup < 0 || c.stress < 0 || c.stressRuns < 1 {
		return nil, errors.New("-n and -stress-runs must be ≥ 1, -warmup and -stress ≥ 0")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "acpbench:", err)
		return 2
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(stderr, "acpbench:", err)
			return 2
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	rep, err := bench(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "acpbench:", err)
		return 2
	}
	if err := output(cfg, rep, stdout); err != nil {
		fmt.Fprintln(stderr, "acpbench:", err)
		return 2
	}
	for _, a := range rep.Agents {
		if len(a.Errors) > 0 {
			return 1
		}
	}
	for _, s := range rep.Stress {
		if len(s.Errors) > 0 {
			return 1
		}
	}
	return 0
}

// bench starts the mock and measures every agent.
func bench(ctx context.Context, cfg *config, stderr io.Writer) (*report, error) {
	opts := mockllm.Options{Tools: map[string]mockllm.ToolCall{}, MaxChunks: max(cfg.stress, mockllm.DefaultMaxChunks),
		DumpDir: cfg.dump}
	for _, dir := range []string{cfg.dump, cfg.trace} {
		if dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
		}
	}
	for _, t := range cfg.tools {
		key, tc, err := mockllm.ParseToolFlag(t)
		if err != nil {
			return nil, err
		}
		opts.Tools[key] = tc
	}
	work := cfg.home
	if work == "" {
		dir, err := os.MkdirTemp("", "acpbench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		work = dir
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	agents, err := makeAgents(cfg, work)
	if err != nil {
		return nil, err
	}
	mock, err := mockllm.New(opts)
	if err != nil {
		return nil, err
	}
	defer mock.Close()
	for _, a := range agents {
		a.env = agentEnv(cfg, a, mock.URL())
		a.Argv = expand(a.Argv, a, mock.URL())
		// Agents run in their workspace: resolve the program first.
		if a.Argv[0], err = resolveProgram(a.Argv[0]); err != nil {
			return nil, fmt.Errorf("agent %s: %w", a.Name, err)
		}
	}
	r := &runner{mock: mock, timeout: cfg.timeout, grace: 5 * time.Second, work: work, trace: cfg.trace}
	if !cfg.noMCP {
		if r.mcp, err = newMCPFleet(); err != nil {
			return nil, err
		}
		defer r.mcp.close()
	}
	progress := func(format string, args ...any) {
		if !cfg.quiet {
			fmt.Fprintf(stderr, format+"\n", args...)
		}
	}
	rep := &report{Tool: "acpbench", Date: time.Now().UTC().Format(time.RFC3339), Host: host(), N: cfg.n,
		Warmup: cfg.warmup, Targets: map[string]Target{}}
	for _, m := range append(append([]metric{}, metrics...), stressMetrics...) {
		if m.target != nil {
			rep.Targets[m.key] = *m.target
		}
	}
	for _, a := range agents {
		ar := agentReport{Name: a.Name, Command: a.Argv, Metrics: map[string]Summary{}}
		samples := map[string][]float64{}
		for i := range cfg.warmup + cfg.n {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			what := fmt.Sprintf("iteration %d/%d", i-cfg.warmup+1, cfg.n)
			if i < cfg.warmup {
				what = fmt.Sprintf("warm-up %d/%d", i+1, cfg.warmup)
			}
			s, err := r.iterate(ctx, a)
			if err != nil {
				progress("%s: %s: %v", a.Name, what, err)
				if i >= cfg.warmup {
					ar.Errors = append(ar.Errors, fmt.Sprintf("%s: %v", what, err))
				}
				continue
			}
			progress("%s: %s: init %.1f ms, session/new %.2f ms (3 MCP servers: %.2f ms), text %.1f ms, tool %.1f ms, cancel %.1f ms, RSS %.1f MB",
				a.Name, what, s["spawn_to_initialize_ms"], s["session_new_ms"], s["session_new_mcp_ms"], s["text_turn_ms"], s["tool_turn_ms"],
				s["cancel_to_reply_ms"], s["rss_after_turns_mb"])
			if i < cfg.warmup {
				continue
			}
			ar.Iterations++
			for k, v := range s {
				samples[k] = append(samples[k], v)
			}
		}
		for _, m := range metrics {
			ar.Metrics[m.key] = summarize(samples[m.key])
		}
		rep.Agents = append(rep.Agents, ar)
	}
	fillRatios(rep.Agents)
	if cfg.stress > 0 {
		for _, a := range stressed(cfg, agents) {
			sr := stressReport{Name: a.Name, Chunks: cfg.stress, Metrics: map[string]Summary{}}
			samples := map[string][]float64{}
			for i := range cfg.stressRuns + 1 {
				s, err := r.stress(ctx, a, cfg.stress)
				if err != nil {
					progress("%s: stress %d: %v", a.Name, i, err)
					sr.Errors = append(sr.Errors, err.Error())
					continue
				}
				what := fmt.Sprintf("stress %d/%d", i, cfg.stressRuns)
				if i == 0 {
					what = "stress warm-up"
				}
				progress("%s: %s: %.0f chunks/s, %.0f ms, peak RSS %.1f MB", a.Name, what,
					s["chunks_per_s"], s["turn_ms"], s["peak_rss_mb"])
				if i == 0 {
					continue // warm-up
				}
				sr.Runs++
				for k, v := range s {
					samples[k] = append(samples[k], v)
				}
			}
			for _, m := range stressMetrics {
				sr.Metrics[m.key] = summarize(samples[m.key])
			}
			rep.Stress = append(rep.Stress, sr)
		}
	}
	return rep, nil
}

// fillRatios sets each agent's medians relative to the first agent's.
func fillRatios(agents []agentReport) {
	if len(agents) < 2 {
		return
	}
	base := agents[0].Metrics
	for i := range agents[1:] {
		a := &agents[i+1]
		a.Ratios = map[string]float64{}
		for k, s := range a.Metrics {
			if b := base[k]; b.N > 0 && s.N > 0 && b.Median != 0 {
				a.Ratios[k] = s.Median / b.Median
			}
		}
	}
}

// stressed is the agents -stress-agents names (default: the first).
func stressed(cfg *config, agents []*agent) []*agent {
	if cfg.stressAgents == "" {
		return agents[:1]
	}
	var out []*agent
	for _, name := range strings.Split(cfg.stressAgents, ",") {
		for _, a := range agents {
			if a.Name == strings.TrimSpace(name) {
				out = append(out, a)
			}
		}
	}
	return out
}

var unsafeLabel = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// makeAgents parses the -agent flags and creates each agent's HOME.
func makeAgents(cfg *config, work string) ([]*agent, error) {
	var out []*agent
	seen := map[string]bool{}
	for _, spec := range cfg.agents {
		name, command, ok := strings.Cut(spec, "=")
		argv, err := splitCommand(command)
		if !ok || name == "" || err != nil || len(argv) == 0 {
			return nil, fmt.Errorf("-agent %q: want NAME=COMMAND [ARGS…] (%v)", spec, err)
		}
		label := unsafeLabel.ReplaceAllString(name, "-")
		if seen[label] {
			return nil, fmt.Errorf("-agent %q: duplicate name", spec)
		}
		seen[label] = true
		home := work + "/" + label + "-home"
		for _, d := range []string{".config", ".local/state", ".local/share", ".cache", ".codex"} {
			if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
				return nil, err
			}
		}
		out = append(out, &agent{Name: name, Argv: argv, label: label, home: home})
	}
	return out, nil
}

// resolveProgram makes a program path absolute: looked up in PATH when
// it has no slash, else relative to the current directory.
func resolveProgram(p string) (string, error) {
	if !strings.Contains(p, "/") {
		return exec.LookPath(p)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", err
	}
	return abs, nil
}

// defaultEnv points every known client library at the mock.
var defaultEnv = []string{
	"DEEPSEEK_BASE_URL={{mock}}/v1", "DEEPSEEK_API_KEY=mock-key",
	"OPENAI_BASE_URL={{mock}}/v1", "OPENAI_API_KEY=mock-key",
	"ANTHROPIC_BASE_URL={{mock}}", "ANTHROPIC_API_KEY=mock-key",
	"GOOGLE_GEMINI_BASE_URL={{mock}}", "GEMINI_API_KEY=mock-key",
	"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
}

// homeEnv gives each agent a private HOME unless -inherit-home.
var homeEnv = []string{
	"HOME={{home}}", "XDG_CONFIG_HOME={{home}}/.config", "XDG_STATE_HOME={{home}}/.local/state",
	"XDG_DATA_HOME={{home}}/.local/share", "XDG_CACHE_HOME={{home}}/.cache", "CODEX_HOME={{home}}/.codex",
	"DSH_ACP_CONFIG=",
}

// agentEnv is the caller's environment with the mock variables, the
// private HOME and the -env values applied, in that order.
func agentEnv(cfg *config, a *agent, mockURL string) []string {
	vars := append([]string{}, defaultEnv...)
	if !cfg.inheritHome {
		vars = append(vars, homeEnv...)
	}
	for _, e := range cfg.envs {
		if name, rest, ok := strings.Cut(e, ":"); ok && !strings.Contains(name, "=") {
			if name == a.Name {
				vars = append(vars, rest)
			}
			continue
		}
		vars = append(vars, e)
	}
	vars = expand(vars, a, mockURL)
	set := map[string]string{}
	var order []string
	for _, kv := range append(os.Environ(), vars...) {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			order = append(order, k)
		}
		set[k] = v
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+set[k])
	}
	return env
}

// expand replaces {{mock}} (the agent's mock base URL), {{mockroot}} and
// {{home}}.
func expand(ss []string, a *agent, mockURL string) []string {
	rep := strings.NewReplacer("{{mock}}", mockURL+"/agent/"+a.label, "{{mockroot}}", mockURL, "{{home}}", a.home)
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = rep.Replace(s)
	}
	return out
}

// splitCommand splits a command line on blanks, honouring '…', "…" and
// backslash escapes.
func splitCommand(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, errors.New("unterminated quote or escape")
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
