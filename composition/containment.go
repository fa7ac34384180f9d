package composition

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/bash"
	"github.com/dsh-acp/dsh-acp/capabilities/fs"
)

// Containment is the composition feature that keeps confined commands in
// beyond upstream's file-write confinement (upstream's contract confines
// FILE effects only, so its compositions never have it): no network by
// default (the Network option), secrets unreadable, and the files that run
// code later (git hooks and config, editor and agent settings) read-only;
// the file tools ask before they touch either (docs/security.md).
type Containment struct {
	// Network is the default of the Network option: agent.NetworkOff
	// (the default) or agent.NetworkOn.
	Network string `json:"network,omitempty"`
	// Secrets are further paths hidden from confined commands, besides
	// the built-in list; a leading ~/ is the home directory.
	Secrets []string `json:"secrets,omitempty"`
	// Protected are further paths, relative to each workspace root (glob
	// patterns), kept read-only, besides the built-in list.
	Protected []string `json:"protected,omitempty"`
}

// defaultContainment is the default composition's.
var defaultContainment = Containment{Network: agent.NetworkOff}

// secretDirs and secretFiles are the built-in secrets, relative to the
// home directory.
var (
	secretDirs  = []string{".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".config/gh"}
	secretFiles = []string{".docker/config.json", ".netrc", ".git-credentials", ".npmrc", ".pypirc"}
)

// protectedPaths are the built-in files that run code later, relative to
// a workspace root (glob patterns), each with why it is special.
var protectedPaths = []struct{ pattern, why string }{
	{".git/hooks", "git runs the hooks in it, unconfined, at your next commit"},
	{".git/config", "git runs commands it names (core.fsmonitor, core.hooksPath, aliases), unconfined"},
	{".zed", "the editor reads its project settings, which can name the programs it starts"},
	{".vscode/settings.json", "the editor reads its project settings, which can name the programs it starts"},
	{".vscode/tasks.json", "the editor runs the tasks it defines"},
	{".claude/settings*.json", "agents run the hooks these settings define"},
	{".codex", "agents run the hooks and commands its settings define"},
	{".envrc", "direnv runs it in your shell when you enter the directory"},
}

// userProtected is why a path of Containment.Protected is special.
const userProtected = "it is listed as protected in the configuration (it runs code later)"

// contained is Containment resolved for a server: where the user's home
// and the agent's own files are.
type contained struct {
	Containment
	home   string
	agents []string // the agent's config and state directories
	state  string   // the agent's state directory
}

func (c Composition) contained(getenv func(string) string) *contained {
	if c.Containment == nil {
		return nil
	}
	cfg := ConfigPath(getenv)
	if filepath.Base(filepath.Dir(cfg)) == "dsh-acp" {
		cfg = filepath.Dir(cfg)
	}
	return &contained{Containment: *c.Containment, home: getenv("HOME"), agents: []string{cfg, stateDir(getenv)}, state: stateDir(getenv)}
}

// secrets lists the absolute paths hidden from a session's commands: the
// built-in ones and the configured ones beneath the home, the agent's own
// config and state (never readable nor writable by a command, even inside
// a workspace root), and `.env*` files in the directories above the roots
// and in the home.
func (k *contained) secrets(roots []string) []string {
	var out []string
	if k.home != "" {
		for _, p := range append(append(slices.Clone(secretDirs), secretFiles...), k.Secrets...) {
			out = append(out, k.expand(p))
		}
	}
	out = append(out, k.agents...)
	// A secret directory the user opened a root in is theirs to work in.
	out = slices.DeleteFunc(out, func(s string) bool {
		return slices.ContainsFunc(roots, func(r string) bool { return within(r, s) })
	})
	seen := map[string]bool{}
	dirs := []string{k.home}
	for _, r := range roots {
		for d := filepath.Dir(r); d != r; r, d = d, filepath.Dir(d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		envs, _ := filepath.Glob(filepath.Join(d, ".env*"))
		for _, e := range envs {
			if !slices.ContainsFunc(roots, func(r string) bool { return within(e, r) }) {
				out = append(out, e)
			}
		}
	}
	return out
}

// expand makes a configured path absolute: ~/ is the home, a relative
// path is relative to the home.
func (k *contained) expand(p string) string {
	p = strings.TrimPrefix(p, "~/")
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(k.home, p)
}

// protected lists the protected paths beneath each root that exist. A
// pattern that matches nothing protects its nearest existing directory
// beneath the root instead (a missing .vscode/settings.json protects
// .vscode, where a command could otherwise create it); one missing up to
// the root itself (.envrc, .zed) is passed as the pattern, which the
// sandbox's tripwire guards (no mount can cover it without leaving its
// mount point behind: docs/security.md). A repository's missing
// .git/hooks is created first (as git init does), so that it is
// protected too.
func (k *contained) protected(roots []string) []string {
	var out []string
	for _, r := range roots {
		if fi, err := os.Stat(filepath.Join(r, ".git")); err == nil && fi.IsDir() {
			_ = os.Mkdir(filepath.Join(r, ".git", "hooks"), 0o755)
		}
		for _, p := range k.patterns() {
			ms, _ := filepath.Glob(filepath.Join(r, p.pattern))
			if len(ms) == 0 {
				// Missing up to the root itself: the pattern goes to the
				// sandbox as is, whose tripwire removes what a command
				// creates there.
				ms = []string{filepath.Join(r, p.pattern)}
				for d := filepath.Dir(ms[0]); within(d, r) && d != r; d = filepath.Dir(d) {
					if fi, err := os.Stat(d); err == nil && fi.IsDir() {
						ms = []string{d}
						break
					}
				}
			}
			for _, m := range ms {
				if !slices.Contains(out, m) {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// patterns are the built-in and the configured protected patterns.
func (k *contained) patterns() []struct{ pattern, why string } {
	out := slices.Clone(protectedPaths)
	for _, p := range k.Protected {
		out = append(out, struct{ pattern, why string }{p, userProtected})
	}
	return out
}

// special implements fs.Options.Special: a secret for any op, a protected
// path for writes and edits, judged against the session's roots.
func (k *contained) special(call *capabilities.Call, op fs.Op, path string) string {
	roots := sessionRoots(call)
	for _, s := range k.secrets(roots) {
		if real, err := filepath.EvalSymlinks(s); err == nil {
			s = real
		}
		if within(path, s) {
			return "it holds secrets (" + s + "), which the sandbox hides from commands"
		}
	}
	if op == fs.OpRead {
		return ""
	}
	for _, r := range roots {
		if real, err := filepath.EvalSymlinks(r); err == nil {
			r = real
		}
		rel, err := filepath.Rel(r, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		for _, p := range k.patterns() {
			if matchesBeneath(p.pattern, rel) {
				return "it runs code later: " + p.why
			}
		}
	}
	return ""
}

// matchesBeneath reports whether rel is a path the pattern matches, or
// lies beneath one.
func matchesBeneath(pattern, rel string) bool {
	for {
		if ok, _ := filepath.Match(pattern, rel); ok {
			return true
		}
		parent := filepath.Dir(rel)
		if parent == "." || parent == rel {
			return false
		}
		rel = parent
	}
}

// within reports whether p is dir or lies beneath it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// sessionRoots are the call's workspace roots: its cwd and the extra
// roots.
func sessionRoots(call *capabilities.Call) []string {
	var roots []string
	if call.Session != nil && call.Session.Cwd() != "" {
		roots = append(roots, call.Session.Cwd())
	}
	return append(roots, capabilities.HostOf(call.Session).Roots...)
}

// bashContainment implements bash.Sandboxing.Contain.
func (k *contained) bashContainment(call *capabilities.Call) bash.Containment {
	roots := sessionRoots(call)
	return bash.Containment{NoNetwork: sessionNetwork(call) != agent.NetworkOn, Hidden: k.secrets(roots), Protected: k.protected(roots),
		Quarantine: filepath.Join(k.state, "quarantine")}
}

// sessionNetwork is the calling session's Network option.
func sessionNetwork(call *capabilities.Call) string {
	if k := capabilities.HostOf(call.Session).Knobs; k != nil {
		if v, ok := k.Knob(agent.KnobNetwork); ok {
			return v
		}
	}
	return agent.NetworkOff
}

// rememberNetwork turns the calling session's Network option on after an
// "always allow" answer.
func rememberNetwork(call *capabilities.Call) {
	if k := capabilities.HostOf(call.Session).Knobs; k != nil {
		k.SetKnob(agent.KnobNetwork, agent.NetworkOn)
	}
}
