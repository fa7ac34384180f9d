package instructions

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

// Plugin is the source name of the context the member adds.
const Plugin = "project-instructions"

// Nested is a post-execute member: after a successful read of a file in
// a subdirectory of the session root that has its own instructions file
// (AGENTS.md, else CLAUDE.md) not yet in the prompt or the conversation,
// it adds that file once, as context. What it added is found again in the
// log, so a loaded session does not add a file twice.
type Nested struct {
	// MaxFileBytes caps one file (zero: DefaultMaxFileBytes).
	MaxFileBytes int
	// Confined resolves the files beneath the session root (nil: os.Root):
	// one that leads out of it is skipped, even when the file read is
	// reached through a link the user allowed.
	Confined capabilities.Confined
}

var _ pipeline.ResultReviewer = (*Nested)(nil)

// Name implements pipeline.Namer.
func (*Nested) Name() string { return Plugin }

// ReviewResult implements pipeline.ResultReviewer.
func (n *Nested) ReviewResult(_ context.Context, s pipeline.Conversation, c pipeline.Call, r pipeline.Result) (pipeline.ResultDecision, error) {
	if c.Name != "read" || r.IsError {
		return pipeline.ResultDecision{}, nil
	}
	var a struct {
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(c.Args, &a) != nil || a.FilePath == "" {
		return pipeline.ResultDecision{}, nil
	}
	root := filepath.Clean(s.Cwd())
	p := a.FilePath
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	dir := filepath.Dir(filepath.Clean(p))
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return pipeline.ResultDecision{}, nil // the root's own file is in the prompt
	}
	seen := added(s.Log())
	var content []session.Block
	// From the subdirectory nearest the root down to the file's own.
	var dirs []string
	for d := dir; d != root; d = filepath.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	limit := Options{MaxFileBytes: n.MaxFileBytes}.max()
	project := reader{confined: n.Confined, root: root}
	for _, d := range dirs {
		f, ok := project.readDir(d, limit)
		if !ok || seen[f.Path] {
			continue
		}
		content = append(content, session.TextBlock(header(f.Path)+f.Text))
	}
	if len(content) == 0 {
		return pipeline.ResultDecision{}, nil
	}
	return pipeline.ResultDecision{Context: &pipeline.Context{Source: session.PluginSource(Plugin), Content: content}}, nil
}

const headerPrefix = "Instructions for files under this directory, from "

func header(path string) string { return headerPrefix + path + ":\n\n" }

// added returns the files this member already added to the session.
func added(log *session.Log) map[string]bool {
	seen := map[string]bool{}
	if log == nil {
		return seen
	}
	for _, ev := range log.Events() {
		if ev.Type != session.TypeContextMessage {
			continue
		}
		var m session.Message
		if json.Unmarshal(ev.Data, &m) != nil || m.Source.Plugin != Plugin {
			continue
		}
		for _, b := range m.Content {
			if rest, ok := strings.CutPrefix(b.Text, headerPrefix); ok {
				if i := strings.Index(rest, ":\n\n"); i > 0 {
					seen[rest[:i]] = true
				}
			}
		}
	}
	return seen
}
