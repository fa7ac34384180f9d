package composition

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/hooks"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
)

// hookFile is one place a tool's users keep hooks.
type hookFile struct {
	dialect  hooks.Dialect
	path     string
	settings bool // a Claude Code settings file: hooks under "hooks"
	project  bool // inside the project: runs only with the user's consent
}

// userHookFiles are the user-level files, read once at startup: Claude
// Code's user settings ($CLAUDE_CONFIG_DIR or ~/.claude) and Codex's hooks
// file ($CODEX_HOME or ~/.codex).
func userHookFiles(getenv func(string) string) []hookFile {
	claudeDir := getenv("CLAUDE_CONFIG_DIR")
	if claudeDir == "" {
		claudeDir = filepath.Join(getenv("HOME"), ".claude")
	}
	codexDir := getenv("CODEX_HOME")
	if codexDir == "" {
		codexDir = filepath.Join(getenv("HOME"), ".codex")
	}
	return []hookFile{
		{dialect: hooks.Claude, path: filepath.Join(claudeDir, "settings.json"), settings: true},
		{dialect: hooks.Codex, path: filepath.Join(codexDir, "hooks.json")},
	}
}

// projectHookFiles are a project's files, read when a session opens on
// it: .claude/settings.local.json, .claude/settings.json, .codex/hooks.json.
func projectHookFiles(cwd string) []hookFile {
	return []hookFile{
		{dialect: hooks.Claude, path: filepath.Join(cwd, ".claude", "settings.local.json"), settings: true, project: true},
		{dialect: hooks.Claude, path: filepath.Join(cwd, ".claude", "settings.json"), settings: true, project: true},
		{dialect: hooks.Codex, path: filepath.Join(cwd, ".codex", "hooks.json"), project: true},
	}
}

// loadedHooks are the hook files that parsed, and why the others did not.
type loadedHooks struct {
	parts    map[hooks.Dialect][]hooks.Part
	problems []string
}

// loadHookFiles reads files strictly: a file with invalid JSON or an
// invalid matcher is rejected whole, with one warning; a missing file is
// nothing.
func loadHookFiles(log zerolog.Logger, files []hookFile) loadedHooks {
	out := loadedHooks{parts: map[hooks.Dialect][]hooks.Part{}}
	for _, f := range files {
		cfg, err := hooks.Load(f.dialect, f.path, hooks.ParseOptions{Strict: true, Settings: f.settings})
		if err != nil {
			if hooks.IsMissing(err) {
				continue
			}
			log.Warn().Err(err).Msg("hook config rejected: none of its hooks will run")
			out.problems = append(out.problems, err.Error())
			continue
		}
		for _, s := range cfg.Skipped {
			log.Warn().Str("file", f.path).Msg("skipping " + s)
		}
		if !cfg.Empty() {
			out.parts[f.dialect] = append(out.parts[f.dialect], hooks.Part{Config: cfg, Untrusted: f.project})
		}
	}
	return out
}

// defaultMembers is the default composition's hooks, as users have them:
// user hooks run without asking; a project's run once the user agreed
// (remembered per project with a hash of its hook set). Hooks run confined
// by the session's sandbox mode, in the session's directory.
func (c Composition) defaultMembers(o ServerOptions, approvals *approval.Service, consent *consentStore) memberFactory {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	user := loadHookFiles(o.Log, userHookFiles(getenv))
	store := consent
	if store == nil {
		store = newConsentStore(filepath.Join(stateDir(getenv), "hook-consent.json"), o.Log)
	}
	runner := &hooks.Runner{Env: c.envPolicy()}
	if c.Sandbox != "" {
		confiner := hooks.Confiner(unconfinable{})
		if o.Confiner != nil {
			confiner = o.Confiner
		}
		def := c.Sandbox
		runner.Sandbox = &hooks.Sandboxing{
			Confiner: confiner,
			Mode: func(s pipeline.Conversation) sandbox.Mode {
				if k := capabilities.HostOf(s).Knobs; k != nil {
					if v, ok := k.Knob(agent.KnobSandboxMode); ok {
						return sandbox.Mode(v)
					}
				}
				return def
			},
			Root: func(s pipeline.Conversation) string { return s.Cwd() },
		}
	}
	counters := map[hooks.Dialect]*hooks.Counter{hooks.Claude: {}, hooks.Codex: {}}
	return func(s pipeline.Conversation) []any {
		project := loadHookFiles(o.Log, projectHookFiles(s.Cwd()))
		var ms []any
		if problems := append(append([]string(nil), user.problems...), project.problems...); len(problems) > 0 {
			ms = append(ms, &hookNotice{text: "Some hook configuration was rejected, so none of its hooks run:\n- " +
				strings.Join(problems, "\n- ") + "\n\n"})
		}
		var consent *projectConsent
		var projectCfgs []*hooks.Config
		for _, d := range []hooks.Dialect{hooks.Claude, hooks.Codex} {
			for _, p := range project.parts[d] {
				projectCfgs = append(projectCfgs, p.Config)
			}
		}
		if len(projectCfgs) > 0 {
			consent = newProjectConsent(store, approvals, s.Cwd(), projectCfgs)
		}
		for _, d := range []hooks.Dialect{hooks.Claude, hooks.Codex} {
			// Precedence, highest first: the project's local settings, its
			// shared settings, then the user's.
			parts := append(append([]hooks.Part(nil), project.parts[d]...), user.parts[d]...)
			cfg := hooks.MergeConfigs(d, parts...)
			if cfg.Empty() {
				continue
			}
			b := &hooks.Bridge{Config: cfg, Runner: runner, Counter: counters[d], Log: o.Log, ProjectDir: true}
			if consent != nil {
				b.Consent = consent
			}
			ms = append(ms, inheritedBridge{b})
		}
		return ms
	}
}

// inheritedBridge is a session's hook bridge, which its child agents
// take over (agent.Inheritable): a child runs the hooks its parent had
// when it was spawned, under the parent's project consent (a project's
// hooks the user allowed keep running, and guarding, in the child),
// whatever the project's files say by then.
type inheritedBridge struct{ *hooks.Bridge }

// Inherit implements agent.Inheritable.
func (b inheritedBridge) Inherit(pipeline.Conversation) any { return b }

// hookNotice tells the user, at the session's first prompt, which hook
// configuration was rejected (a visible message in the editor).
type hookNotice struct {
	text string
	once sync.Once
}

// Name implements pipeline.Namer.
func (*hookNotice) Name() string { return "hook config notice" }

// SubmitPrompt implements pipeline.PromptSubmitter.
func (n *hookNotice) SubmitPrompt(_ context.Context, s pipeline.Conversation, _ pipeline.Prompt) (pipeline.PromptDecision, error) {
	n.once.Do(func() {
		s.Log().Append(agent.TypeCommandResult, agent.CommandResult{Command: "hooks", Text: n.text})
	})
	return pipeline.PromptDecision{}, nil
}

// projectConsent asks the user, the first time a project's hook would run
// in a session, whether the project's hooks may run; "always" is
// remembered for the project with the hash of its hook set.
type projectConsent struct {
	store     *consentStore
	approvals *approval.Service
	project   string
	hash      string
	listing   string

	mu      sync.Mutex
	decided bool
	allowed bool
}

func newProjectConsent(store *consentStore, approvals *approval.Service, project string, cfgs []*hooks.Config) *projectConsent {
	var lines []string
	h := sha256.New()
	for _, c := range cfgs {
		for _, cmd := range c.Commands() {
			lines = append(lines, string(c.Dialect)+" "+cmd)
			fmt.Fprintf(h, "%s\x00%s\x00", c.Dialect, cmd)
		}
	}
	return &projectConsent{store: store, approvals: approvals, project: project, hash: hex.EncodeToString(h.Sum(nil)),
		listing: "- " + strings.Join(lines, "\n- ")}
}

// Allow implements hooks.Consent.
func (p *projectConsent) Allow(ctx context.Context, s pipeline.Conversation) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.decided {
		return p.allowed
	}
	if p.store.trusted(p.project, p.hash) {
		p.decided, p.allowed = true, true
		return true
	}
	if p.approvals == nil {
		p.decided = true
		return false
	}
	if !session.TurnOpen(s.Log().Events()) {
		return false // detached (SessionStart): only an earlier "always" lets it run
	}
	s.Log().Append(agent.TypeCommandResult, agent.CommandResult{Command: "hooks", Text: "This project defines hooks, " +
		"shell commands that run on your machine at points of the conversation:\n" + p.listing +
		"\nThey run only if you allow them (\"always\" remembers it for this project until its hooks change).\n\n"})
	out, err := p.approvals.Request(ctx, s.Log(), approval.Request{ToolName: acp.HooksConsent, CallID: "hooks-consent-" + p.hash[:12],
		Reason: "run this project's hooks:\n" + p.listing})
	if err != nil {
		return false
	}
	switch out {
	case approval.AllowedAlways:
		p.decided, p.allowed = true, true
		if err := p.store.remember(p.project, p.hash); err != nil {
			s.Log().Append(agent.TypeCommandResult, agent.CommandResult{Command: "hooks",
				Text: "The hooks run in this session, but the choice could not be remembered: " + err.Error()})
		}
	case approval.AllowedOnce:
		p.decided, p.allowed = true, true
	case approval.Cancelled:
		return false // asked again at the next point
	default:
		p.decided = true
	}
	return p.allowed
}

// consentStore remembers, per project directory, the hash of the hook set
// the user always allows (in the user's state directory). The file is a
// trustedFile: a consent that appears in it behind this process's back is
// never honoured.
type consentStore struct {
	file *trustedFile
}

type consentFile struct {
	Projects map[string]string `json:"projects"`
}

// newConsentStore loads the consent file at path (at server start).
func newConsentStore(path string, log zerolog.Logger) *consentStore {
	decode := func(data []byte) (pairs, error) {
		var f consentFile
		if err := json.Unmarshal(data, &f); err != nil {
			return nil, err
		}
		p := pairs{}
		for k, v := range f.Projects {
			if v != "" {
				p[k] = []string{v}
			}
		}
		return p, nil
	}
	encode := func(p pairs) any {
		f := consentFile{Projects: map[string]string{}}
		for k, vs := range p {
			if len(vs) > 0 {
				f.Projects[k] = vs[len(vs)-1]
			}
		}
		return f
	}
	return &consentStore{file: newTrustedFile(path, decode, encode, log)}
}

func (c *consentStore) trusted(project, hash string) bool {
	return c.file.has(project, hash)
}

// forget drops project's consent and reports whether there was one.
func (c *consentStore) forget(project string) (bool, error) {
	had := false
	err := c.file.update(".hook-consent-*.tmp", func(p pairs) bool {
		had = len(p[project]) > 0
		delete(p, project)
		return had
	})
	if err != nil {
		return false, fmt.Errorf("remember hook consent: %w", err)
	}
	return had, nil
}

// remember records hash for project (atomically: temp file, rename).
func (c *consentStore) remember(project, hash string) error {
	err := c.file.update(".hook-consent-*.tmp", func(p pairs) bool {
		if p.has(project, hash) && len(p[project]) == 1 {
			return false
		}
		p[project] = []string{hash}
		return true
	})
	if err != nil {
		return fmt.Errorf("remember hook consent: %w", err)
	}
	return nil
}
