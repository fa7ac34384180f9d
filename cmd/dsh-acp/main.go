// Command dsh-acp is a DeepSeek-powered coding agent that editors launch
// over the Agent Client Protocol: it speaks newline-delimited JSON-RPC on
// stdin/stdout and logs to stderr. With --replay it runs recorded scenarios
// against itself and compares the wire byte for byte.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/agent/llm/deepseek"
	"github.com/dsh-acp/dsh-acp/agent/llm/replay"
	"github.com/dsh-acp/dsh-acp/composition"
	"github.com/dsh-acp/dsh-acp/internal/credentials"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
	"github.com/dsh-acp/dsh-acp/session/sqlite"
	"github.com/dsh-acp/dsh-acp/snapshots"
)

// version is the release's semantic version, set at build time with
// -ldflags "-X main.version=…" (the Makefile's RELEASE: "0.3.0" for
// make dist, "0.3.0-dev+<commit>" for make build); a plain go build says
// it is a development build of no known release.
var version = "0.0.0-dev"

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type options struct {
	composition  string
	sessionsRoot string
	version      bool
	login        bool
	logout       bool
	modelReplay  string
	override     string
	children     multiFlag
	replay       bool
	update       bool
	subprocess   bool
	transcript   bool
	logLevel     string
	configPath   string
	paths        []string
}

func main() {
	// The Landlock launcher is this binary re-executed; it must run before
	// anything else touches the process.
	sandbox.MaybeRunHelper()
	// The agent holds the API key: no same-uid process may read its
	// environment or memory. And it adopts what its commands orphan, so that
	// a session can kill it when it closes.
	for _, harden := range []func() error{sandbox.SetNonDumpable, sandbox.SetChildSubreaper} {
		if err := harden(); err != nil {
			fmt.Fprintln(os.Stderr, "dsh-acp: warning:", err)
		}
	}
	if os.Getenv("GOGC") == "" {
		// The heap is small and mostly the session log: trading a little
		// memory for fewer collections keeps streaming cheap.
		debug.SetGCPercent(200)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

func parse(args []string, stderr io.Writer, getenv func(string) string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("dsh-acp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.composition, "composition", "", "built-in composition name or composition file (default: the config's, else \"default\")")
	fs.StringVar(&o.sessionsRoot, "sessions-root", "", "directory of persisted session logs")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVar(&o.login, "login", false, "sign in: ask for a DeepSeek API key (not echoed), check it with the API and store it in the OS credential store")
	fs.BoolVar(&o.logout, "logout", false, "sign out: forget the stored API key")
	fs.StringVar(&o.modelReplay, "model-replay", "", "serve with the model recorded in this session log instead of a live one")
	fs.StringVar(&o.override, "model-replay-override", "", "scripted model entries replacing the recorded primary script")
	fs.Var(&o.children, "model-replay-child", "subagent child log, in child order (repeatable)")
	fs.BoolVar(&o.replay, "replay", false, "run the scenarios at the given paths and compare with their goldens")
	fs.BoolVar(&o.update, "update", false, "with --replay: rewrite the goldens of our own scenarios")
	fs.BoolVar(&o.transcript, "transcript", false, "with --replay: print each run as a readable conversation")
	fs.BoolVar(&o.subprocess, "replay-subprocess", false, "with --replay: run this binary as a subprocess per scenario instead of in-process")
	fs.StringVar(&o.logLevel, "log-level", "", "stderr log level: debug, info, warn, error (env DSH_ACP_LOG; default warn)")
	fs.StringVar(&o.configPath, "config", "", "user config file (default $XDG_CONFIG_HOME/dsh-acp/config.json)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: dsh-acp [flags]               serve ACP on stdio\n       dsh-acp --login | --logout     sign in or out (the key is kept in the OS credential store)\n       dsh-acp --replay PATH... [--update]\n\nflags:\n")
		fs.PrintDefaults()
		fmt.Fprint(stderr, usageEnvironment(getenv))
	}
	// --replay takes its paths as the remaining arguments; accept
	// "--replay PATH" anywhere by moving paths after flags.
	if err := fs.Parse(reorder(args)); err != nil {
		return nil, err
	}
	o.paths = fs.Args()
	if o.replay && len(o.paths) == 0 {
		return nil, errors.New("--replay needs at least one scenario path")
	}
	if !o.replay && len(o.paths) > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (did you mean --replay?)", o.paths)
	}
	if o.update && !o.replay {
		return nil, errors.New("--update only applies with --replay")
	}
	if o.login && o.logout {
		return nil, errors.New("--login and --logout exclude each other")
	}
	if (o.login || o.logout) && o.replay {
		return nil, errors.New("--login and --logout do not apply with --replay")
	}
	// The snapshot harness's environment (replay contract § 3).
	if getenv("DSH_SNAPSHOT") == "replay" {
		if o.modelReplay == "" {
			o.modelReplay = getenv("DSH_SNAPSHOT_FILE")
		}
		if o.override == "" {
			o.override = getenv("DSH_SNAPSHOT_OVERRIDE")
		}
		if len(o.children) == 0 && getenv("DSH_SNAPSHOT_CHILD_FILES") != "" {
			o.children = strings.Split(getenv("DSH_SNAPSHOT_CHILD_FILES"), ":")
		}
	}
	if o.sessionsRoot == "" {
		o.sessionsRoot = getenv("DSH_SNAPSHOT_SESSIONS_ROOT")
	}
	if (o.override != "" || len(o.children) > 0) && o.modelReplay == "" {
		return nil, errors.New("--model-replay-override and --model-replay-child need --model-replay")
	}
	return o, nil
}

// usageEnvironment is the --help section on the environment and the
// files dsh-acp reads, with the paths this environment resolves to.
func usageEnvironment(getenv func(string) string) string {
	return "\nenvironment:\n" +
		"  DEEPSEEK_API_KEY      the API key (the config's apiKeyEnv names another variable); it wins over\n" +
		"                        the key stored by --login; without either, a prompt answers auth_required\n" +
		"  DEEPSEEK_BASE_URL     an OpenAI-compatible API root (default " + deepseek.DefaultBaseURL + ")\n" +
		"  DSH_ACP_CONFIG        the config file (default $XDG_CONFIG_HOME/dsh-acp/config.json)\n" +
		"  DSH_ACP_LOG           stderr log level: debug, info, warn, error\n" +
		"  DSH_ACP_CREDENTIAL_STORE\n" +
		"                        where --login keeps the key: auto (the OS credential store, else a file\n" +
		"                        of mode 0600 in the config dir; the default) or file\n" +
		"  XDG_CONFIG_HOME, XDG_STATE_HOME, HOME\n" +
		"                        locate the config file and the state directory (sessions, permissions)\n" +
		"  CLAUDE_CONFIG_DIR, CODEX_HOME\n" +
		"                        where your Claude Code and Codex hooks and prompt commands live\n" +
		"\nfiles:\n" +
		"  config        " + composition.ConfigPath(getenv) + "\n" +
		"  key file      " + filepath.Join(configDir(getenv), credentials.FileName) + " (without an OS credential store)\n" +
		"  sessions      " + composition.DefaultSessionsRoot(getenv) + "\n" +
		"  permissions   " + filepath.Join(filepath.Dir(composition.DefaultSessionsRoot(getenv)), "permissions.json") + "\n"
}

// reorder moves "--replay PATH…" paths behind the flags so flag parsing
// sees every flag.
func reorder(args []string) []string {
	var flags, paths []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && takesValue(a) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
			continue
		}
		paths = append(paths, a)
	}
	return append(flags, paths...)
}

func takesValue(flagArg string) bool {
	switch strings.TrimLeft(flagArg, "-") {
	case "composition", "sessions-root", "model-replay", "model-replay-override", "model-replay-child", "log-level", "config":
		return true
	}
	return false
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	o, err := parse(args, stderr, getenv)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "dsh-acp:", err)
		return 2
	}
	if o.version {
		fmt.Fprintf(stdout, "dsh-acp %s\n", version)
		return 0
	}
	log := newLogger(stderr, o.logLevel, getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if o.login || o.logout {
		if err := signInOut(ctx, o, stdin, stderr, getenv); err != nil {
			fmt.Fprintln(stderr, "dsh-acp:", err)
			return 1
		}
		return 0
	}

	if o.replay {
		var l snapshots.Launcher = snapshots.InProcess{Version: version}
		if o.subprocess {
			exe, err := os.Executable()
			if err != nil {
				fmt.Fprintln(stderr, "dsh-acp:", err)
				return 2
			}
			l = snapshots.Subprocess{Binary: exe}
		}
		ok, err := snapshots.Main(ctx, stdout, o.paths, l, snapshots.Options{Update: o.update, Transcript: o.transcript})
		if err != nil {
			fmt.Fprintln(stderr, "dsh-acp:", err)
			return 2
		}
		if !ok {
			return 1
		}
		return 0
	}
	if path := getenv("DSH_ACP_CPUPROFILE"); path != "" {
		// A developer aid for measuring the server under a client's load.
		if f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid())); err == nil {
			defer f.Close()
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	if err := serve(ctx, o, stdin, stdout, log, getenv); err != nil {
		fmt.Fprintln(stderr, "dsh-acp:", err)
		return 1
	}
	return 0
}

// serve wires the composition and speaks ACP on stdio until stdin ends.
func serve(ctx context.Context, o *options, stdin io.Reader, stdout io.Writer, log zerolog.Logger, getenv func(string) string) error {
	cfgPath := o.configPath
	if cfgPath == "" {
		cfgPath = composition.ConfigPath(getenv)
	}
	user, err := composition.LoadUserConfig(cfgPath)
	if err != nil {
		return err
	}
	name := o.composition
	if name == "" {
		name = user.Composition
	}
	if name == "" {
		name = "default"
	}
	comp, err := composition.Load(name)
	if err != nil {
		return err
	}
	if comp, err = comp.Apply(user); err != nil {
		return err
	}
	root := o.sessionsRoot
	if root == "" {
		root = user.SessionsRoot
	}
	if root == "" {
		root = composition.DefaultSessionsRoot(getenv)
	}
	if root, err = filepath.Abs(root); err != nil {
		return err
	}
	if err := privateDir(root, log); err != nil {
		return err
	}
	store, err := openStore(user.Store, root)
	if err != nil {
		return err
	}
	defer store.Close()
	creds, err := credentialStore(getenv)
	if err != nil {
		return err
	}
	k := newKeys(user, creds, getenv)
	provider, err := newProvider(o, user, k, getenv, log)
	if err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	newConfiner := sandbox.NewDefaultProvider
	if comp.Upstream {
		newConfiner = sandbox.NewUpstreamProvider // the contract's exact argv where ours differs (Seatbelt)
	}
	confiner, err := newConfiner()
	if err != nil {
		return err
	}
	srv := comp.NewServer(composition.ServerOptions{Provider: provider, Store: store, Log: log, Version: version, LaunchDir: cwd, Confiner: confiner,
		MaxSteps: user.MaxSteps, Limits: user.Limits, Delegation: user.Delegation, Models: user.Models, ListModels: modelLister(o, user, k, getenv, log),
		Auth: envAuth(o, k, log), CheckDerivation: getenv("DSH_SNAPSHOT") == "replay", AfterInitialize: afterInitialize(getenv, log)})
	log.Info().Str("composition", comp.Name).Str("sessions", root).Msg("serving ACP on stdio")
	return srv.Serve(ctx, stdin, stdout)
}

// afterInitialize is the process's start-up work that waits until the
// editor has its initialize answer. The package initializers ran long
// before: let go of the executable's text pages they touched (see
// releaseStartupPages), on the side, as the madvise takes ~0.5 ms of CPU
// that would otherwise compete with answering initialize on a small
// machine. DSH_ACP_STARTUP_PAGES=keep keeps them, to measure the
// difference.
func afterInitialize(getenv func(string) string, log zerolog.Logger) func() {
	if getenv("DSH_ACP_STARTUP_PAGES") == "keep" {
		return nil
	}
	return func() {
		go func() {
			if err := releaseStartupPages(); err != nil {
				log.Warn().Err(err).Msg("could not release the start-up pages")
			}
		}()
	}
}

func openStore(kind, root string) (session.Store, error) {
	switch kind {
	case "", "jsonl":
		return jsonl.Open(root)
	case "sqlite":
		if err := os.MkdirAll(root, 0o700); err != nil {
			return nil, err
		}
		return sqlite.Open(filepath.Join(root, "sessions.db"))
	}
	return nil, fmt.Errorf("store %q is not available in this build", kind)
}

// newProvider returns the recorded model (--model-replay) or the live
// DeepSeek one. A missing API key is not fatal at startup: a key from the
// environment is fixed for the process, a signed-in one is looked up at
// each model call (a sign-in or a sign-out in a terminal takes effect at
// the next prompt), and without one every model call fails saying how to
// sign in.
func newProvider(o *options, user composition.UserConfig, k keys, getenv func(string) string, log zerolog.Logger) (llm.Provider, error) {
	if o.modelReplay != "" {
		return replay.New(o.modelReplay, o.override, o.children)
	}
	live := func(key string) llm.Provider {
		return deepseek.New(deepseek.Config{BaseURL: baseURL(user, getenv), APIKey: key, Version: version, APIKeyEnv: k.env,
			ConnectTimeout: user.Network.ConnectTimeout(), HeaderTimeout: user.Network.HeaderTimeout(), IdleTimeout: user.Network.IdleTimeout(),
			DataIdleTimeout: user.Network.DataIdleTimeout(),
			MaxRetries:      user.Network.MaxRetries, RetryBudget: user.Network.RetryBudget(),
			OnRetry: func(ctx context.Context, r deepseek.Retry) {
				log.Warn().Int("attempt", r.Attempt).Dur("delay", r.Delay).Str("reason", r.Reason).Msg("model call retried")
				llm.Notice(ctx, r.String())
			}})
	}
	if key := k.fromEnv(); key != "" {
		return live(key), nil
	}
	return &signedIn{keys: k, live: live, log: log}, nil
}

// envAuth is the API key as auth methods: the environment variable, the
// terminal sign-in (this executable with --login) and logout (none with a
// recorded model, which needs no key).
func envAuth(o *options, k keys, log zerolog.Logger) *acp.EnvAuth {
	if o.modelReplay != "" {
		return nil
	}
	a := &acp.EnvAuth{Var: k.env, Present: func() bool {
		key, _, err := k.key()
		if err != nil {
			log.Warn().Err(err).Msg("the stored API key is not usable")
		}
		return key != ""
	}}
	if k.store != nil {
		exe, err := os.Executable()
		if err != nil {
			exe = ""
		}
		a.Login = &acp.TerminalLogin{Command: exe, Args: loginArgs}
		a.Logout = func() error {
			_, err := k.store.Delete()
			return err
		}
	}
	return a
}

// modelLister lists the live provider's models for the Model menu (none
// with a recorded model or without a key at startup).
func modelLister(o *options, user composition.UserConfig, k keys, getenv func(string) string, log zerolog.Logger) composition.ModelLister {
	if o.modelReplay != "" {
		return nil
	}
	key, _, err := k.key()
	if err != nil {
		log.Warn().Err(err).Msg("the stored API key is not usable")
	}
	if key == "" {
		return nil
	}
	return composition.HTTPModelLister(baseURL(user, getenv), key, nil)
}

// signInOut runs --login or --logout.
func signInOut(ctx context.Context, o *options, stdin io.Reader, stderr io.Writer, getenv func(string) string) error {
	cfgPath := o.configPath
	if cfgPath == "" {
		cfgPath = composition.ConfigPath(getenv)
	}
	user, err := composition.LoadUserConfig(cfgPath)
	if err != nil {
		return err
	}
	store, err := credentialStore(getenv)
	if err != nil {
		return err
	}
	if o.logout {
		return logout(user, store, stderr, getenv)
	}
	return login(ctx, user, store, stdin, stderr, getenv)
}

func newLogger(w io.Writer, level string, getenv func(string) string) zerolog.Logger {
	if level == "" {
		level = getenv("DSH_ACP_LOG")
	}
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		lvl = zerolog.WarnLevel
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}
