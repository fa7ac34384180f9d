// Package bash is the bash tool family: `bash` runs a shell command in the
// session's working directory (tools contract § 3), and a background-task
// registry (Tasks) with the tools task_output, task_list and task_kill, of
// which bash is the first producer.
//
// With Options.Sandbox a command's argv is the sandbox's (bwrap or the
// Landlock helper around bash); without, bash runs directly. When the session's
// host has terminals (capabilities.Host.Terminals: the editor's, over
// ACP), a foreground command runs in one of them instead, still confined:
// the host is handed the wrapped argv (terminal.go). Without them, a
// running command's output reaches its card through Host.Live (live.go).
// Background tasks always run locally.
package bash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// MaxTimeoutMs caps every foreground command's timeout.
const MaxTimeoutMs = 600000

// DefaultTimeoutMs is the default timeout when Options leaves it zero
// (acp-agent's value).
const DefaultTimeoutMs = 60000

// Options configures the bash tool family.
type Options struct {
	// DefaultTimeout is the foreground timeout in milliseconds when the call
	// gives none; zero means DefaultTimeoutMs.
	DefaultTimeout int
	// Tasks is the background-task registry to produce into; nil means a new
	// registry private to this family.
	Tasks *Tasks
	// Environ returns the agent's environment; nil means os.Environ.
	Environ func() []string
	// Cwd is the working directory for calls whose session has none; empty
	// means the process's working directory.
	Cwd string
	// SpillDir is where truncated streams are spilled; empty means
	// os.TempDir().
	SpillDir string
	// KillGrace is the delay between SIGTERM and SIGKILL; zero means the
	// contract's 3000 ms (tests shorten it).
	KillGrace time.Duration
	// Sandbox confines commands and advertises the escalation parameters
	// (sandbox_permissions, justification); nil runs them unconfined.
	Sandbox *Sandboxing
	// EnvPass are glob patterns of environment variable names passed to
	// commands even when they look like secrets (EnvPolicy.Pass).
	EnvPass []string
	// EnvStrip are glob patterns of further names never passed
	// (EnvPolicy.Strip).
	EnvStrip []string
}

// New returns the family's tools: bash, task_output, task_list, task_kill.
func New(opts Options) []capabilities.Tool {
	if opts.Tasks == nil {
		opts.Tasks = NewTasks(nil)
	}
	return append([]capabilities.Tool{NewTool(opts)}, TaskTools(opts.Tasks)...)
}

// Tool is the bash tool. One serves one session: its confined commands
// share the session's temp dir, and Close kills whatever the session's
// commands left running.
type Tool struct {
	opts  Options
	env   EnvPolicy
	tmp   *sessionTmp
	procs *tracker
	terms terminals // host terminals still held
}

// NewTool returns the bash tool alone (New adds the task tools).
func NewTool(opts Options) *Tool {
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeoutMs
	}
	if opts.Tasks == nil {
		opts.Tasks = NewTasks(nil)
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ
	}
	if opts.SpillDir == "" {
		opts.SpillDir = os.TempDir()
	}
	t := &Tool{opts: opts, env: EnvPolicy{Pass: opts.EnvPass, Strip: opts.EnvStrip}, procs: &tracker{}}
	if sb := opts.Sandbox; sb != nil {
		t.tmp = &sessionTmp{base: sb.TmpBase}
	}
	return t
}

// Tasks returns the registry background commands are produced into.
func (t *Tool) Tasks() *Tasks { return t.opts.Tasks }

// Name implements capabilities.Tool.
func (t *Tool) Name() string { return "bash" }

// Traits implements capabilities.Tool: a command may do anything its sandbox lets it.
func (*Tool) Traits() capabilities.Traits {
	return capabilities.Traits{Runs: true, Writes: true, Network: true}
}

// Description implements capabilities.Tool.
func (t *Tool) Description() string {
	return "Execute a shell command with `bash -c` and get back what it printed. The command runs without a terminal " +
		"(stdin is /dev/null) in the session's working directory unless workdir says otherwise, and is stopped after " +
		strconv.Itoa(t.opts.DefaultTimeout) + " ms unless timeoutMs is given (at most 600000). The result is stdout, " +
		"then stderr after a [stderr] line, then status markers such as [exit code: N], [killed by signal: NAME] or " +
		"[timed out after Nms]; a clean exit has no marker. Each stream keeps only its last 64000 bytes, and the " +
		"complete output is saved to a file whose path is given. Set run_in_background for servers, watchers and other " +
		"long jobs, then use task_output, task_list and task_kill to follow them."
}

// Schema implements capabilities.Tool.
func (t *Tool) Schema() *capabilities.Schema {
	props := []capabilities.Property{
		capabilities.Req("command", capabilities.String("The command line for bash to run.")),
		capabilities.Req("description", capabilities.String("A short, plain statement of what the command does; the user sees it.")),
		capabilities.Opt("timeoutMs", capabilities.Number("Time limit in milliseconds; defaults to "+strconv.Itoa(t.opts.DefaultTimeout)+" and cannot exceed 600000.")),
		capabilities.Opt("workdir", capabilities.String("Directory to run in: absolute, or relative to the session's working directory (the default).")),
		capabilities.Opt("run_in_background", capabilities.Boolean("Start the command as a background task and return its id immediately instead of waiting for it.")),
	}
	if t.opts.Sandbox != nil {
		props = append(props,
			capabilities.Opt("sandbox_permissions", &capabilities.Schema{
				Type:        "string",
				Description: "Ask to run this one command under a wider sandbox mode; the user must approve, and a justification is required.",
				Enum:        []string{string(sandbox.WorkspaceWrite), string(sandbox.DangerFullAccess)},
			}),
			capabilities.Opt("justification", capabilities.String("One sentence for the user explaining why this command needs the wider sandbox.")),
		)
		if t.opts.Sandbox.Contain != nil {
			props = append(props, capabilities.Opt("network", capabilities.Boolean(
				"Ask to run this one command with network access (sandboxed commands have none while the Network option is off); "+
					"the user must approve, and a justification is required.")))
		}
	}
	return capabilities.Object(props...)
}

// PromptSection implements capabilities.Sectioner.
func (t *Tool) PromptSection() capabilities.Section {
	return capabilities.Section{Name: "tool:bash", Order: 105, Text: "## Running commands\n\n" +
		"The bash tool runs one non-interactive shell command per call. Its result does not say \"success\": read the " +
		"end of it. A line `[exit code: N]` means the command exited with status N, `[killed by signal: NAME]` means a " +
		"signal ended it, and `[timed out after Nms]` means it was stopped for running too long; with none of these " +
		"markers it exited with status 0. Always check for the `[exit code: N]` marker before you rely on a command " +
		"having worked, and never report a failed command as done. Pass flags that keep tools non-interactive, use " +
		"run_in_background for anything that does not finish by itself, and prefer the file tools for reading and " +
		"editing files."}
}

// args are bash's arguments. Escalation fields stay raw: without a confining
// executor they are undeclared and may hold any JSON.
type args struct {
	Command            string          `json:"command"`
	Description        string          `json:"description"`
	TimeoutMs          *float64        `json:"timeoutMs"`
	Workdir            *string         `json:"workdir"`
	RunInBackground    *bool           `json:"run_in_background"`
	SandboxPermissions json.RawMessage `json:"sandbox_permissions"`
	Justification      json.RawMessage `json:"justification"`
	Network            json.RawMessage `json:"network"`
}

func parseArgs(raw json.RawMessage) (args, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("invalid arguments: %w", err)
	}
	return a, nil
}

func (a args) background() bool { return a.RunInBackground != nil && *a.RunInBackground }

// check applies the value checks of tools contract § 3, in order.
func (t *Tool) check(a args) error {
	if strings.TrimSpace(a.Command) == "" {
		return errors.New("invalid command: expected a non-empty string")
	}
	if strings.TrimSpace(a.Description) == "" {
		return errors.New("invalid description: expected a non-empty string")
	}
	if a.TimeoutMs != nil && !(*a.TimeoutMs > 0) {
		return fmt.Errorf("invalid timeoutMs: expected a positive number, got %s", formatMs(*a.TimeoutMs))
	}
	hasPerm, hasJust := len(a.SandboxPermissions) > 0, len(a.Justification) > 0
	askNet := t.opts.Sandbox != nil && t.opts.Sandbox.Contain != nil && a.wantsNetwork()
	switch {
	case hasPerm && !hasJust:
		return errors.New("invalid escalation: sandbox_permissions requires a justification")
	case askNet && !hasJust:
		return errNoJustification
	case hasJust && !hasPerm && !askNet:
		return errors.New("invalid escalation: justification is only valid together with sandbox_permissions")
	}
	if hasJust {
		var j string
		if err := json.Unmarshal(a.Justification, &j); err != nil || strings.TrimSpace(j) == "" {
			return errors.New("invalid justification: expected a non-empty sentence")
		}
	}
	if hasPerm && t.opts.Sandbox == nil {
		return errors.New("sandbox_permissions is not available in this composition (no sandboxing executor to escalate)")
	}
	return nil
}

// Run implements capabilities.Tool.
func (t *Tool) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	a, err := parseArgs(call.Args)
	if err != nil {
		return capabilities.Result{}, err
	}
	if err := t.check(a); err != nil {
		return capabilities.Result{}, err
	}
	sp := spec{
		command:   a.Command,
		dir:       t.workdir(call, a.Workdir),
		env:       t.env.Filter(t.opts.Environ()),
		spillDir:  t.opts.SpillDir,
		killGrace: t.opts.KillGrace,
		track:     t.procs.add,
	}
	var host *capabilities.Host
	if call.Session != nil {
		host = call.Session.Host()
	}
	inTerminal := !a.background() && host != nil && host.Terminals != nil
	if inTerminal {
		// A host terminal gives the command a terminal for stdin; it gets
		// /dev/null, as locally.
		sp.command = terminalStdin + sp.command
	}
	var conf *confinement
	if sb := t.opts.Sandbox; sb != nil {
		mode, err := sb.effectiveMode(ctx, call, a)
		if err != nil {
			return capabilities.Result{}, err
		}
		cont, err := sb.containment(ctx, call, a, mode)
		if err != nil {
			return capabilities.Result{}, err
		}
		if conf, err = sb.prepare(ctx, call, &sp, mode, cont, t.tmp); err != nil {
			return capabilities.Result{}, err
		}
	}
	if a.background() {
		task := startBackground(ctx, sp, conf)
		id := t.opts.Tasks.Register(taskKind, owner(call), taskLabel(a.Command), task)
		return capabilities.TextResult("started background task " + id), nil
	}
	if inTerminal {
		text, err := t.runInTerminal(ctx, call, host, sp, conf, t.timeoutMs(a), a.Description)
		if err != nil {
			return capabilities.Result{}, err
		}
		return capabilities.TextResult(text), nil
	}
	if host != nil && host.Live != nil {
		sp.live = &liveTail{}
		stop := streamLive(host.Live, call.CallID, a.Description, sp.live)
		defer stop() // the last view is shown before the result is returned
	}
	text, err := runForeground(ctx, sp, t.timeoutMs(a), conf)
	if err != nil {
		return capabilities.Result{}, err
	}
	return capabilities.TextResult(text), nil
}

// timeoutMs is min(timeoutMs ?? default, MaxTimeoutMs).
func (t *Tool) timeoutMs(a args) float64 {
	timeout := float64(t.opts.DefaultTimeout)
	if a.TimeoutMs != nil {
		timeout = *a.TimeoutMs
	}
	return min(timeout, MaxTimeoutMs)
}

// workdir resolves the model's workdir against the session cwd.
func (t *Tool) workdir(call *capabilities.Call, given *string) string {
	base := ""
	if call.Session != nil {
		base = call.Session.Cwd()
	}
	if base == "" {
		base = t.opts.Cwd
	}
	if base == "" {
		if wd, err := os.Getwd(); err == nil {
			base = wd
		}
	}
	if given == nil || *given == "" {
		return base
	}
	if filepath.IsAbs(*given) {
		return filepath.Clean(*given)
	}
	return filepath.Join(base, *given)
}

// owner is the calling session's id ("" without a session log).
func owner(call *capabilities.Call) string {
	if call.Session == nil || call.Session.Log() == nil {
		return ""
	}
	return call.Session.Log().ID()
}

// rawString is s as a JSON string.
func rawString(s string) json.RawMessage { return jsonx.MustMarshal(s) }

// Close implements capabilities.Closer: the session is going away, so the
// host terminals its calls still hold are killed and released, its
// background tasks are killed (their process groups get SIGTERM, then
// SIGKILL), then every process its commands left behind in their sessions
// (see tracker), and its temp dir is removed.
func (t *Tool) Close(ctx context.Context) error {
	t.terms.closeAll(ctx)
	t.opts.Tasks.Close(ctx)
	t.procs.sweepAll()
	if t.tmp != nil {
		return t.tmp.remove()
	}
	return nil
}
