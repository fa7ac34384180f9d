package composition

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/fs"
	"github.com/dsh-acp/dsh-acp/capabilities/instructions"
	"github.com/dsh-acp/dsh-acp/capabilities/localfs"
	"github.com/dsh-acp/dsh-acp/capabilities/search"
	"github.com/dsh-acp/dsh-acp/capabilities/skills"
	"github.com/dsh-acp/dsh-acp/capabilities/web"
)

// More tool families (the default composition's toolbox).
const (
	FamilySearch Family = "search" // glob, grep
	FamilyWeb    Family = "web"    // web_fetch (+ web_search with a provider)
	FamilySkills Family = "skills" // skill, and the skill catalogue
)

// TimeoutsConfig is the tool time budget policy of a composition
// (capabilities.Timeouts, in seconds). Zero fields: no budget / no cap.
type TimeoutsConfig struct {
	// DefaultSec is the budget of a tool without its own.
	DefaultSec float64 `json:"defaultSec,omitempty"`
	// MaxSec caps every budget, a call's timeoutMs included.
	MaxSec float64 `json:"maxSec,omitempty"`
	// PerToolSec sets a tool's budget by name; negative: none.
	PerToolSec map[string]float64 `json:"perToolSec,omitempty"`
}

// WebConfig configures the web family.
type WebConfig struct {
	// MaxBytes caps the bytes read of one page (default 5 MiB).
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// TimeoutSec is the default budget of one fetch (default 30).
	TimeoutSec float64 `json:"timeoutSec,omitempty"`
	// Search names the web_search provider: "" (none: no web_search
	// tool) or "brave".
	Search string `json:"search,omitempty"`
	// SearchKeyEnv names the variable holding the provider's API key
	// (default BRAVE_API_KEY).
	SearchKeyEnv string `json:"searchKeyEnv,omitempty"`
}

// defaultTimeouts is the default composition's budget policy: a generous
// backstop for every tool (file tools and web_fetch can wait on an
// approval), the cap for the tools that hand work to child agents, none
// for the tools that only wait for the user (both by the tools' traits).
var defaultTimeouts = TimeoutsConfig{DefaultSec: 600, MaxSec: 1800}

func (t TimeoutsConfig) policy() capabilities.Timeouts {
	p := capabilities.Timeouts{Default: secs(t.DefaultSec), Max: secs(t.MaxSec)}
	if len(t.PerToolSec) > 0 {
		p.PerTool = map[string]time.Duration{}
		for k, v := range t.PerToolSec {
			if v < 0 {
				p.PerTool[k] = -1
			} else {
				p.PerTool[k] = secs(v)
			}
		}
	}
	return p
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// getenv is the environment that locates the user's files.
func (d Deps) getenv() func(string) string {
	if d.Getenv != nil {
		return d.Getenv
	}
	return os.Getenv
}

// spillDir is where a session's spilled results go: beside the session
// store, <state>/dsh-acp/spill/<session id>.
func (d Deps) spillDir(env capabilities.Env) string {
	if env == nil || env.Log() == nil {
		return ""
	}
	id := env.Log().Header().ID
	if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return ""
	}
	root := d.SpillRoot
	if root == "" {
		root = filepath.Join(filepath.Dir(DefaultSessionsRoot(d.getenv())), "spill")
	}
	return filepath.Join(root, id)
}

// toolbox returns the tools of the search, web and skills families.
func (c Composition) toolbox(env capabilities.Env, deps Deps) []capabilities.Tool {
	var tools []capabilities.Tool
	if c.Has(FamilySearch) {
		o := search.Options{Env: c.envPolicy()}
		if c.Sandbox != "" {
			confiner := deps.Confiner
			if confiner == nil {
				confiner = unconfinable{}
			}
			o.Sandbox = &search.Sandboxing{Confiner: confiner, Mode: c.sessionMode, Root: func(call *capabilities.Call) string {
				if call.Session == nil {
					return deps.LaunchDir
				}
				return call.Session.Cwd()
			}}
			if k := c.contained(deps.getenv()); k != nil {
				o.Sandbox.Hidden = func(call *capabilities.Call) []string { return k.secrets(sessionRoots(call)) }
			}
			o.Gate = spillReads{gate: &fs.ModeGate{Mode: c.sessionMode, Approver: deps.Approver}, dir: deps.spillDir(env)} // outside every root: asks, like read
		}
		tools = append(tools, search.New(o)...)
	}
	if c.Has(FamilyWeb) {
		o := web.Options{MaxBytes: c.Web.MaxBytes, Timeout: secs(c.Web.TimeoutSec)}
		if deps.Programs != nil {
			// Pages are converted in the program worker.
			o.Markdown = deps.Programs.Markdown
		}
		if deps.Approver != nil {
			o.Approver = deps.Approver
		}
		if c.Web.Search == "brave" {
			keyEnv := c.Web.SearchKeyEnv
			if keyEnv == "" {
				keyEnv = "BRAVE_API_KEY"
			}
			if key := deps.getenv()(keyEnv); key != "" {
				o.Search = &web.Brave{APIKey: key}
			}
		}
		tools = append(tools, web.New(o)...)
	}
	if c.Has(FamilySkills) && env != nil {
		cat := skills.Options{Root: env.Cwd(), Confined: confinedFiles}.Load(skills.Dirs(env.Cwd(), deps.getenv())...)
		if len(cat.Skills) > 0 {
			tools = append(tools, &skills.Tool{Catalogue: cat})
		}
	}
	return tools
}

// finish applies the registry-level policies: spill files, time budgets,
// project instructions.
func (c Composition) finish(r *capabilities.Registry, env capabilities.Env, deps Deps) *capabilities.Registry {
	if c.SpillBytes > 0 {
		r.WithSpill(capabilities.Spill{Cap: c.SpillBytes, Dir: deps.spillDir, Skip: []string{"read"}})
	}
	if c.ToolTimeouts != nil {
		r.WithTimeouts(c.ToolTimeouts.policy())
	}
	if c.Instructions && env != nil {
		files := instructions.Load(env.Cwd(), instructions.Options{UserFiles: instructions.UserCandidates(deps.getenv()), Confined: confinedFiles})
		r.WithSections(instructions.Section(files))
	}
	return r
}

// confinedFiles is the file tools' access confined beneath a root, for the
// files the agent reads on a repository's behalf (instructions, skills,
// prompt commands): a symbolic link out of the workspace is refused there
// exactly as the read tool refuses it.
func confinedFiles(root string) (capabilities.Files, error) {
	l, err := localfs.New(root)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// spillReads lets the file tools read the session's spill files (outside
// the project root) without asking; every other access goes to the mode
// gate.
type spillReads struct {
	gate fs.Gate
	dir  string
}

// Check implements fs.Gate. A read goes ahead without asking only when the
// path, symbolic links resolved, is a spill file: one a link planted in
// the spill directory leads out of is judged like any path outside.
func (g spillReads) Check(ctx context.Context, a fs.Access) (bool, error) {
	if a.Op == fs.OpRead && g.dir != "" && strings.HasPrefix(filepath.Clean(a.Path), g.dir+string(filepath.Separator)) &&
		resolvesInto(a.Path, g.dir) {
		return false, nil
	}
	return g.gate.Check(ctx, a)
}

// resolvesInto reports whether path, symbolic links resolved, lies beneath
// dir (resolved too); a missing path counts when its directory does.
func resolvesInto(path, dir string) bool {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, os.ErrNotExist) {
		if parent, perr := filepath.EvalSymlinks(filepath.Dir(path)); perr == nil && (parent == realDir || strings.HasPrefix(parent, realDir+string(filepath.Separator))) {
			return true
		}
		return false
	}
	return err == nil && strings.HasPrefix(real, realDir+string(filepath.Separator))
}

// compaction is the agent's compaction setting (nil: off).
func (c Composition) compaction() *agent.Compaction {
	if c.CompactAt <= 0 || c.ContextWindow <= 0 {
		return nil
	}
	return &agent.Compaction{Window: c.ContextWindow, Threshold: c.CompactAt, MaxTokens: c.CompactMaxTokens}
}

// skillCommands offers each skill of the session as a slash command whose
// prompt is the skill itself (so it works whether or not the skill tool
// is mounted); names already taken by a command are skipped.
func skillCommands(cwd string, getenv func(string) string, taken map[string]bool) []acp.PromptCommand {
	var out []acp.PromptCommand
	cat := skills.Options{Root: cwd, Confined: confinedFiles}.Load(skills.Dirs(cwd, getenv)...)
	for _, sk := range cat.Skills {
		if taken[sk.Name] {
			continue
		}
		body, err := cat.Body(sk)
		if err != nil {
			continue
		}
		taken[sk.Name] = true
		out = append(out, acp.PromptCommand{Name: sk.Name, Description: sk.Description, Hint: "what to apply it to (optional)",
			Template: "Follow the skill \"" + sk.Name + "\" (its files are in " + sk.Dir + "):\n\n" + body + "\n\n$ARGUMENTS"})
	}
	return out
}
