// Package hooks runs Claude Code and Codex command hooks, exactly as their
// users write them, on the turn pipeline (hooks contract): configuration
// loading and matching, the stdin payloads, running a hook like bash runs a
// command (confined, in its own process group, killed with it at the
// timeout), reading its exit code and stdout decisions, merging the
// outcomes of one point, and mapping them onto pipeline decisions.
package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// Dialect is a hook configuration dialect.
type Dialect string

// The two dialects.
const (
	Claude Dialect = "claude"
	Codex  Dialect = "codex"
)

// Plugin is the plugin id the dialect's bridge stamps on what it injects
// ("hooks-claude", "hooks-codex").
func (d Dialect) Plugin() string { return "hooks-" + string(d) }

// Hook points (event names).
const (
	SessionStart     = "SessionStart"
	UserPromptSubmit = "UserPromptSubmit"
	PreToolUse       = "PreToolUse"
	PostToolUse      = "PostToolUse"
	Stop             = "Stop"
	SubagentStart    = "SubagentStart"
	SubagentStop     = "SubagentStop"
)

// codexPoints are the only events the Codex dialect reads.
var codexPoints = []string{PreToolUse, PostToolUse, SessionStart, UserPromptSubmit, Stop}

// DefaultTimeout is a hook's timeout when its config sets none.
const DefaultTimeout = 600 * time.Second

// Command is one runnable command hook.
type Command struct {
	// Command is the shell text run with `bash -c`.
	Command string
	// Timeout bounds the run; zero means DefaultTimeout.
	Timeout time.Duration
	// Source is the file the hook came from (diagnostics, consent).
	Source string
}

// Group is one matcher group of an event: its hooks run when the matcher
// selects the point's query.
type Group struct {
	// Matcher is the group's matcher; nil when the group has none.
	Matcher *string
	// Hooks run sequentially, in order.
	Hooks []Command
	// Untrusted groups run only with the bridge's Consent (a project's
	// hooks).
	Untrusted bool

	re    *regexp.Regexp // compiled non-literal matcher (nil: invalid or literal)
	exact []string       // literal alternatives (Claude)
}

// Config is one dialect's parsed hooks: per point, its groups in file
// order. The zero value has no hooks.
type Config struct {
	Dialect Dialect
	// Points maps an event name to its groups.
	Points map[string][]Group
	// Skipped describes hooks that are not run (another type, async).
	Skipped []string
}

// Empty reports whether the config has no runnable hook.
func (c *Config) Empty() bool { return c == nil || len(c.Points) == 0 }

// Commands lists every runnable command as "<point> [<matcher>]:
// <command>", point by point, for consent prompts and hashing.
func (c *Config) Commands() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, p := range allPoints {
		for _, g := range c.Points[p] {
			label := p
			if g.Matcher != nil && *g.Matcher != "" {
				label += " [" + *g.Matcher + "]"
			}
			for _, h := range g.Hooks {
				out = append(out, label+": "+h.Command)
			}
		}
	}
	return out
}

// allPoints orders the points for listings.
var allPoints = []string{SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SubagentStart, SubagentStop}

// ParseOptions tune parsing.
type ParseOptions struct {
	// Strict rejects the whole config when a matcher is not a valid
	// regular expression (the default composition). Without it an invalid
	// matcher never matches (upstream).
	Strict bool
	// Source names the file in diagnostics.
	Source string
	// Settings reads only the root's "hooks" key (a Claude Code settings
	// file holds other settings besides).
	Settings bool
}

// Parse reads one hooks file of dialect d (hooks contract § 1). The hooks
// map is root.hooks when that is an object, else the root itself. Invalid
// JSON is an error; malformed entries are skipped.
func Parse(d Dialect, data []byte, o ParseOptions) (*Config, error) {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("hooks config %s: not a JSON object: %w", o.Source, err)
	}
	hooksMap := root
	if o.Settings {
		hooksMap = nil
	}
	if raw, ok := root["hooks"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) == nil && inner != nil && isObject(raw) {
			hooksMap = inner
		}
	}
	c := &Config{Dialect: d, Points: map[string][]Group{}}
	for point, raw := range hooksMap {
		if d == Codex && !isCodexPoint(point) {
			continue
		}
		var groups []json.RawMessage
		if json.Unmarshal(raw, &groups) != nil {
			continue
		}
		for _, rg := range groups {
			g, err := parseGroup(d, point, rg, o, c)
			if err != nil {
				return nil, err
			}
			if g != nil {
				c.Points[point] = append(c.Points[point], *g)
			}
		}
	}
	for p, gs := range c.Points {
		if len(gs) == 0 {
			delete(c.Points, p)
		}
	}
	return c, nil
}

// parseGroup reads one matcher group; nil when it has no runnable hook.
func parseGroup(d Dialect, point string, raw json.RawMessage, o ParseOptions, c *Config) (*Group, error) {
	if !isObject(raw) {
		return nil, nil
	}
	var g struct {
		Matcher json.RawMessage   `json:"matcher"`
		Hooks   []json.RawMessage `json:"hooks"`
	}
	if json.Unmarshal(raw, &g) != nil || g.Hooks == nil {
		return nil, nil
	}
	out := &Group{}
	var m string
	if g.Matcher != nil && json.Unmarshal(g.Matcher, &m) == nil {
		out.Matcher = &m
	}
	for _, rh := range g.Hooks {
		if !isObject(rh) {
			continue
		}
		var h struct {
			Type       *string  `json:"type"`
			Command    *string  `json:"command"`
			Timeout    *float64 `json:"timeout"`
			TimeoutSec *float64 `json:"timeoutSec"`
			Async      *bool    `json:"async"`
		}
		if json.Unmarshal(rh, &h) != nil {
			// A field of another type than expected: keep what reads.
			var loose map[string]json.RawMessage
			_ = json.Unmarshal(rh, &loose)
			h.Type, h.Command = jsonString(loose["type"]), jsonString(loose["command"])
			h.Timeout, h.TimeoutSec = jsonNumber(loose["timeout"]), jsonNumber(loose["timeoutSec"])
			h.Async = jsonBool(loose["async"])
		}
		typ := "command"
		if h.Type != nil {
			typ = *h.Type
		}
		if typ != "command" {
			c.Skipped = append(c.Skipped, fmt.Sprintf("%s hook of type %q on %s (only command hooks run)", d, typ, point))
			continue
		}
		if h.Command == nil {
			continue
		}
		if d == Codex && h.Async != nil && *h.Async {
			c.Skipped = append(c.Skipped, fmt.Sprintf("async codex hook on %s (async hooks are not run)", point))
			continue
		}
		cmd := Command{Command: *h.Command, Source: o.Source}
		switch {
		case h.Timeout != nil:
			cmd.Timeout = seconds(*h.Timeout)
		case d == Codex && h.TimeoutSec != nil:
			cmd.Timeout = seconds(*h.TimeoutSec)
		}
		out.Hooks = append(out.Hooks, cmd)
	}
	if len(out.Hooks) == 0 {
		return nil, nil
	}
	if err := out.compile(d); err != nil {
		if o.Strict {
			return nil, fmt.Errorf("hooks config %s: %s on %s: %w", o.Source, quoteMatcher(out.Matcher), point, err)
		}
	}
	return out, nil
}

// seconds converts a configured timeout; a non-positive one expires at
// once.
func seconds(s float64) time.Duration {
	if s <= 0 {
		return time.Nanosecond
	}
	return time.Duration(s * float64(time.Second))
}

func quoteMatcher(m *string) string {
	if m == nil {
		return "matcher"
	}
	return fmt.Sprintf("matcher %q", *m)
}

// literal is Claude's literal-alternatives matcher shape.
var literal = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)

// compile prepares the group's matcher. An invalid regular expression is
// returned as an error and the group never matches.
func (g *Group) compile(d Dialect) error {
	if g.Matcher == nil || *g.Matcher == "" || *g.Matcher == "*" {
		return nil
	}
	m := *g.Matcher
	if d == Claude && literal.MatchString(m) {
		g.exact = strings.Split(m, "|")
		return nil
	}
	re, err := regexp.Compile(m)
	if err != nil {
		return fmt.Errorf("invalid regular expression: %w", err)
	}
	g.re = re
	return nil
}

// Matches reports whether the group's matcher selects query (hooks
// contract § 2): no matcher, "" or "*" match everything; Claude's literal
// alternatives match exactly; anything else is an unanchored regular
// expression, and an invalid one never matches.
func (g *Group) Matches(query string) bool {
	if g.Matcher == nil || *g.Matcher == "" || *g.Matcher == "*" {
		return true
	}
	if g.exact != nil {
		for _, a := range g.exact {
			if a == query {
				return true
			}
		}
		return false
	}
	return g.re != nil && g.re.MatchString(query)
}

// Load reads and parses the hooks file at path. A missing file is
// reported with an error wrapping os.ErrNotExist.
func Load(d Dialect, path string, o ParseOptions) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hooks config %s: %w", path, err)
	}
	if o.Source == "" {
		o.Source = path
	}
	return Parse(d, data, o)
}

// Part is one file's hooks in a merged configuration.
type Part struct {
	Config *Config
	// Untrusted marks the part's groups as needing consent.
	Untrusted bool
}

// MergeConfigs joins the parts of one dialect, in order: per point the
// parts' groups one after another. A hook already present with the same
// matcher and command in a part of the same trust (the same hook in two
// settings files) runs once.
func MergeConfigs(d Dialect, parts ...Part) *Config {
	out := &Config{Dialect: d, Points: map[string][]Group{}}
	seen := map[string]bool{}
	for _, p := range parts {
		if p.Config == nil {
			continue
		}
		out.Skipped = append(out.Skipped, p.Config.Skipped...)
		for point, groups := range p.Config.Points {
			for _, g := range groups {
				m := "\x00none"
				if g.Matcher != nil {
					m = *g.Matcher
				}
				kept := g
				kept.Hooks = nil
				kept.Untrusted = g.Untrusted || p.Untrusted
				for _, h := range g.Hooks {
					k := fmt.Sprint(kept.Untrusted) + "\x00" + point + "\x00" + m + "\x00" + h.Command
					if seen[k] {
						continue
					}
					seen[k] = true
					kept.Hooks = append(kept.Hooks, h)
				}
				if len(kept.Hooks) > 0 {
					out.Points[point] = append(out.Points[point], kept)
				}
			}
		}
	}
	return out
}

// IsMissing reports whether a Load error means the file does not exist.
func IsMissing(err error) bool { return errors.Is(err, os.ErrNotExist) }

func isCodexPoint(p string) bool {
	for _, c := range codexPoints {
		if c == p {
			return true
		}
	}
	return false
}

func isObject(raw json.RawMessage) bool {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

func jsonString(raw json.RawMessage) *string {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return &s
}

func jsonNumber(raw json.RawMessage) *float64 {
	var f float64
	if raw == nil || json.Unmarshal(raw, &f) != nil {
		return nil
	}
	return &f
}

func jsonBool(raw json.RawMessage) *bool {
	var b bool
	if raw == nil || json.Unmarshal(raw, &b) != nil {
		return nil
	}
	return &b
}
