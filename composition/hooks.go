package composition

import (
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities/guard"
	"github.com/dsh-acp/dsh-acp/capabilities/hooks"
	"github.com/dsh-acp/dsh-acp/capabilities/instructions"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
)

// Upstream hook files, relative to the launch directory (hooks contract
// § 1): the Claude bridge's, then the Codex bridge's.
const (
	upstreamClaudeHooks = "hooks.json"
	upstreamCodexHooks  = "codex-hooks.json"
)

// memberFactory returns the turn-pipeline members a session gets, in
// registration order.
type memberFactory func(s pipeline.Conversation) []any

// members wires the composition's pipeline members: the repeat-tool guard
// (one per session), then the hook bridges. Hook files are read once, here.
// consent is the server's project-hooks consent store (nil: one of its own).
func (c Composition) members(o ServerOptions, approvals *approval.Service, consent *consentStore) memberFactory {
	var bridges memberFactory
	switch {
	case c.Hooks && c.Upstream:
		bridges = c.upstreamMembers(o)
	case c.Hooks:
		bridges = c.defaultMembers(o, approvals, consent)
	}
	if !c.RepeatGuard && bridges == nil && !c.Instructions {
		return nil
	}
	return func(s pipeline.Conversation) []any {
		var ms []any
		if c.RepeatGuard {
			ms = append(ms, guard.New(nil))
		}
		if bridges != nil {
			ms = append(ms, bridges(s)...)
		}
		if c.Instructions {
			ms = append(ms, &instructions.Nested{Confined: confinedFiles})
		}
		if !c.Upstream {
			ms = append(ms, mcpSettle{})
		}
		return ms
	}
}

// upstreamMembers is upstream's composition: the Claude bridge over
// ./hooks.json, then the Codex bridge over ./codex-hooks.json, both read
// once at startup from the launch directory; a missing or invalid file is
// a warning and that bridge registers nothing.
func (c Composition) upstreamMembers(o ServerOptions) memberFactory {
	dir := launchDir(o)
	runner := &hooks.Runner{}
	var bridges []any
	for _, f := range []struct {
		d    hooks.Dialect
		name string
	}{{hooks.Claude, upstreamClaudeHooks}, {hooks.Codex, upstreamCodexHooks}} {
		cfg := loadUpstream(o.Log, f.d, filepath.Join(dir, f.name))
		if cfg.Empty() {
			continue
		}
		bridges = append(bridges, &hooks.Bridge{Config: cfg, Runner: runner, Log: o.Log})
	}
	if len(bridges) == 0 {
		return nil
	}
	return func(pipeline.Conversation) []any { return bridges }
}

// loadUpstream reads one upstream hook file; every problem is a warning.
func loadUpstream(log zerolog.Logger, d hooks.Dialect, path string) *hooks.Config {
	cfg, err := hooks.Load(d, path, hooks.ParseOptions{})
	if err != nil {
		log.Warn().Err(err).Str("dialect", string(d)).Msg("could not load hook config — no hooks registered")
		return nil
	}
	for _, s := range cfg.Skipped {
		log.Warn().Msg("skipping " + s)
	}
	return cfg
}

// launchDir is where relative config paths resolve.
func launchDir(o ServerOptions) string {
	if o.LaunchDir != "" {
		return o.LaunchDir
	}
	wd, _ := os.Getwd()
	return wd
}
