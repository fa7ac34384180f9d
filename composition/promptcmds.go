package composition

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/capabilities"
)

// initPrompt is /init: the model writes the project's AGENTS.md.
const initPrompt = "Write an AGENTS.md file at the root of this project for coding agents that will work on it. " +
	"First look around: the layout, the build and test commands (run them to check they work), the conventions the code " +
	"follows, anything surprising. Then write a short, factual AGENTS.md with sections for the project overview, " +
	"how to build and test, the code layout, and the conventions; if an AGENTS.md exists already, improve it instead " +
	"of starting over.\n\n$ARGUMENTS"

// maxCommandFileBytes bounds one user command file.
const maxCommandFileBytes = 64 << 10

// promptCommands returns the prompt commands of a project: /init, then the
// user's own from where Claude Code and Codex users keep them (the
// project's .claude/commands, ~/.claude/commands, ~/.codex/prompts; the
// first of a name wins), in name order.
func promptCommands(getenv func(string) string) func(cwd string) []acp.PromptCommand {
	return func(cwd string) []acp.PromptCommand {
		out := []acp.PromptCommand{{Name: "init", Description: "Write an AGENTS.md for this project from a look at it",
			Hint: "what to focus on (optional)", Template: initPrompt}}
		seen := map[string]bool{"init": true}
		home := getenv("HOME")
		claude := getenv("CLAUDE_CONFIG_DIR")
		if claude == "" && home != "" {
			claude = filepath.Join(home, ".claude")
		}
		codex := getenv("CODEX_HOME")
		if codex == "" && home != "" {
			codex = filepath.Join(home, ".codex")
		}
		// The project's commands resolve beneath the project (a link out
		// of it is skipped); the user's own are read as they are.
		type place struct{ dir, root string }
		dirs := []place{{filepath.Join(cwd, ".claude", "commands"), cwd}}
		if claude != "" {
			dirs = append(dirs, place{dir: filepath.Join(claude, "commands")})
		}
		if codex != "" {
			dirs = append(dirs, place{dir: filepath.Join(codex, "prompts")})
		}
		var user []acp.PromptCommand
		for _, d := range dirs {
			for _, c := range commandFiles(d.dir, d.root) {
				if !seen[c.Name] {
					seen[c.Name] = true
					user = append(user, c)
				}
			}
		}
		user = append(user, skillCommands(cwd, getenv, seen)...)
		sort.Slice(user, func(i, j int) bool { return user[i].Name < user[j].Name })
		return append(out, user...)
	}
}

// commandFiles reads the *.md commands of dir (missing: none); with a
// root, each file must resolve beneath it, the way the read tool resolves
// it (one that is, or lies behind, a symbolic link out is skipped).
func commandFiles(dir, root string) []acp.PromptCommand {
	matches, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	var out []acp.PromptCommand
	for _, m := range matches {
		data, err := readCommandFile(m, root)
		if err != nil {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(m), ".md")
		if name == "" || strings.ContainsAny(name, " \t") {
			continue
		}
		desc, hint, body := frontMatter(string(data))
		if desc == "" {
			desc = firstLine(body)
		}
		out = append(out, acp.PromptCommand{Name: name, Description: desc, Hint: hint, Template: strings.TrimSpace(body)})
	}
	return out
}

// readCommandFile reads one regular command file of at most
// maxCommandFileBytes, beneath root unless root is empty.
func readCommandFile(path, root string) ([]byte, error) {
	if root != "" {
		data, size, err := capabilities.ReadBeneath(context.Background(), confinedFiles, root, path, maxCommandFileBytes)
		if err == nil && size > maxCommandFileBytes {
			return nil, errors.New("too large")
		}
		return data, err
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxCommandFileBytes {
		return nil, errors.New("not a command file")
	}
	return os.ReadFile(path)
}

// frontMatter splits a command file's YAML front matter (description,
// argument-hint) from its body.
func frontMatter(text string) (desc, hint, body string) {
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return "", "", text
	}
	head, body, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		return "", "", text
	}
	for _, line := range strings.Split(head, "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case "description":
			desc = v
		case "argument-hint":
			hint = v
		}
	}
	return desc, hint, body
}

// firstLine is a body's first non-empty line, shortened for a menu.
func firstLine(body string) string {
	for _, l := range strings.Split(body, "\n") {
		if l = strings.TrimSpace(strings.TrimLeft(l, "# ")); l != "" {
			if r := []rune(l); len(r) > 80 {
				l = string(r[:79]) + "…"
			}
			return l
		}
	}
	return "A prompt command"
}
