package search

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// Glob is the glob tool: file paths matching a glob, from `rg --files`
// (so .gitignore is honoured), sorted.
type Glob struct{ opts Options }

// globArgs are glob's parameters.
type globArgs struct {
	Pattern   string   `json:"pattern"`
	Path      string   `json:"path"`
	TimeoutMs *float64 `json:"timeoutMs"`
}

// Name implements capabilities.Tool.
func (*Glob) Name() string { return "glob" }

// Traits implements capabilities.Tool.
func (*Glob) Traits() capabilities.Traits { return capabilities.Traits{ReadOnly: true} }

// Description implements capabilities.Tool.
func (g *Glob) Description() string {
	return "Find files by path glob (gitignore-style: \"*.go\" matches at any depth, \"src/**/*.ts\" below src), " +
		"honouring .gitignore for patterns without a slash; hidden files are skipped. Returns matching paths sorted, at most " +
		strconv.Itoa(g.opts.MaxResults) + "."
}

// Schema implements capabilities.Tool.
func (*Glob) Schema() *capabilities.Schema {
	return capabilities.Object(
		capabilities.Req("pattern", capabilities.String("The glob to match file paths against, e.g. \"**/*.go\"")),
		capabilities.Opt("path", capabilities.String("Directory to search (default: the working directory)")),
		capabilities.Opt("timeoutMs", capabilities.Number("Time budget in milliseconds (default 30000)")),
	)
}

// argv is glob's fixed ripgrep template.
func (g *Glob) argv(rg string, a globArgs, pathArg string) []string {
	argv := append([]string{rg, "--files", "--no-require-git", "--no-config"}, selectFiles(a.Pattern)...)
	if pathArg != "" {
		argv = append(argv, "--", pathArg)
	}
	return argv
}

// Run implements capabilities.Tool.
func (g *Glob) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var a globArgs
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return capabilities.Result{}, fmt.Errorf("invalid arguments: %w", err)
	}
	if strings.TrimSpace(a.Pattern) == "" {
		return capabilities.Result{}, fmt.Errorf("pattern must be a non-empty string")
	}
	budget, rg, scopes, err := g.opts.prepare(ctx, call, a.TimeoutMs, a.Path)
	if err != nil {
		return capabilities.Result{}, err
	}
	var (
		paths []string
		from  = map[string]int{} // path → the scope that printed it
	)
	argv := func(sc scope) []string { return g.argv(rg, a, sc.arg) }
	r, err := g.opts.execAll(ctx, call, scopes, argv, budget, func(i int, line []byte) error {
		if len(paths) >= g.opts.MaxResults {
			return errStop
		}
		p := string(line)
		paths = append(paths, p)
		from[p] = i
		return nil
	})
	if err != nil {
		return capabilities.Result{}, err
	}
	if r.timedOut && len(paths) == 0 {
		return capabilities.Result{}, fmt.Errorf("glob timed out after %s and was stopped; narrow the path, or raise timeoutMs", budget)
	}
	if !r.stopped && !r.timedOut && r.exitCode == 2 && len(paths) == 0 {
		return capabilities.Result{}, fmt.Errorf("glob failed: %s", rgError(r.stderr))
	}
	// The cwd's paths first, then each extra root's, each sorted.
	sort.Slice(paths, func(i, j int) bool {
		if from[paths[i]] != from[paths[j]] {
			return from[paths[i]] < from[paths[j]]
		}
		return paths[i] < paths[j]
	})
	text := strings.Join(paths, "\n")
	var notes []string
	if len(paths) == 0 && !r.timedOut {
		text = "No files found."
	}
	if r.stopped {
		notes = append(notes, fmt.Sprintf("results cut at %d paths; more exist — narrow the pattern or path", g.opts.MaxResults))
	}
	if r.timedOut {
		notes = append(notes, fmt.Sprintf("timed out after %s: results are partial", budget))
	}
	if len(notes) > 0 {
		text += "\n[" + strings.Join(notes, "; ") + "]"
	}
	return capabilities.TextResult(text), nil
}

// PresentCall implements capabilities.CallPresenter.
func (g *Glob) PresentCall(args json.RawMessage) capabilities.CallView {
	var a globArgs
	_ = json.Unmarshal(args, &a)
	title := "Glob " + strconv.Quote(a.Pattern)
	if a.Path != "" {
		title += " in " + a.Path
	}
	v := capabilities.CallView{Kind: capabilities.ViewGeneric, Title: title, ToolKind: capabilities.ToolKindSearch, RawInput: args}
	if a.Path != "" {
		v.Locations = []capabilities.Location{{Path: a.Path}}
	}
	return v
}
