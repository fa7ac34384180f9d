package search

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// Grep is the grep tool: a regular-expression search of file contents
// with `rg --json`, honouring .gitignore.
type Grep struct{ opts Options }

// grepArgs are grep's parameters.
type grepArgs struct {
	Pattern         string   `json:"pattern"`
	Path            string   `json:"path"`
	Glob            string   `json:"glob"`
	CaseInsensitive bool     `json:"case_insensitive"`
	FixedStrings    bool     `json:"fixed_strings"`
	TimeoutMs       *float64 `json:"timeoutMs"`
}

// Name implements capabilities.Tool.
func (*Grep) Name() string { return "grep" }

// Traits implements capabilities.Tool.
func (*Grep) Traits() capabilities.Traits { return capabilities.Traits{ReadOnly: true} }

// Description implements capabilities.Tool.
func (g *Grep) Description() string {
	return "Search file contents with a regular expression (ripgrep syntax), honouring .gitignore; hidden files and " +
		"files over " + g.opts.MaxFileSize + "B are skipped. Returns `path:line: text` for each match, at most " +
		strconv.Itoa(g.opts.MaxResults) + " matches and " + strconv.Itoa(g.opts.PerFile) +
		" per file; narrow the pattern, path or glob when results are cut."
}

// Schema implements capabilities.Tool.
func (*Grep) Schema() *capabilities.Schema {
	return capabilities.Object(
		capabilities.Req("pattern", capabilities.String("The regular expression to search for (ripgrep/Rust regex syntax)")),
		capabilities.Opt("path", capabilities.String("File or directory to search (default: the working directory)")),
		capabilities.Opt("glob", capabilities.String("Only search files whose path matches this glob, e.g. \"*.go\" or \"src/**/*.ts\"")),
		capabilities.Opt("case_insensitive", capabilities.Boolean("Match case-insensitively")),
		capabilities.Opt("fixed_strings", capabilities.Boolean("Treat pattern as a literal string, not a regex")),
		capabilities.Opt("timeoutMs", capabilities.Number("Time budget in milliseconds (default 30000)")),
	)
}

// argv is grep's fixed ripgrep template: flags, then the pattern behind
// -e and the path behind --, so no value is ever read as an option.
func (g *Grep) argv(rg string, a grepArgs, pathArg string) []string {
	argv := []string{rg, "--json", "--no-require-git", "--no-config", "--max-count", strconv.Itoa(g.opts.PerFile),
		"--max-filesize", g.opts.MaxFileSize}
	if a.CaseInsensitive {
		argv = append(argv, "--ignore-case")
	}
	if a.FixedStrings {
		argv = append(argv, "--fixed-strings")
	}
	if a.Glob != "" {
		argv = append(argv, selectFiles(a.Glob)...)
	}
	argv = append(argv, "-e", a.Pattern)
	if pathArg != "" {
		argv = append(argv, "--", pathArg)
	}
	return argv
}

// match is one matched line.
type match struct {
	scope int // the scope that printed it (the cwd's first)
	path  string
	line  int
	text  string
}

// rgMessage is the part of an `rg --json` line grep reads.
type rgMessage struct {
	Type string `json:"type"`
	Data struct {
		Path       rgText `json:"path"`
		Lines      rgText `json:"lines"`
		LineNumber int    `json:"line_number"`
	} `json:"data"`
}

// rgText is ripgrep's arbitrary-data value: text, or base64 bytes.
type rgText struct {
	Text  *string `json:"text"`
	Bytes string  `json:"bytes"`
}

func (t rgText) String() string {
	if t.Text != nil {
		return *t.Text
	}
	b, err := base64.StdEncoding.DecodeString(t.Bytes)
	if err != nil {
		return ""
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Run implements capabilities.Tool.
func (g *Grep) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var a grepArgs
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return capabilities.Result{}, fmt.Errorf("invalid arguments: %w", err)
	}
	if a.Pattern == "" {
		return capabilities.Result{}, fmt.Errorf("pattern must be a non-empty string")
	}
	budget, rg, scopes, err := g.opts.prepare(ctx, call, a.TimeoutMs, a.Path)
	if err != nil {
		return capabilities.Result{}, err
	}
	argv := func(sc scope) []string { return g.argv(rg, a, sc.arg) }
	var (
		matches  []match
		files    = map[string]bool{}
		tooLong  int
		capped   = map[string]bool{} // files that reached the per-file cap
		perFile  = map[string]int{}
		maxTotal = g.opts.MaxResults
	)
	r, err := g.opts.execAll(ctx, call, scopes, argv, budget, func(i int, line []byte) error {
		var m rgMessage
		if err := json.Unmarshal(line, &m); err != nil {
			if len(line) >= maxRecord {
				tooLong++
			}
			return nil
		}
		if m.Type != "match" {
			return nil
		}
		p := m.Data.Path.String()
		if len(matches) >= maxTotal {
			return errStop
		}
		files[p] = true
		perFile[p]++
		if perFile[p] >= g.opts.PerFile {
			capped[p] = true
		}
		matches = append(matches, match{scope: i, path: p, line: m.Data.LineNumber, text: clip(trimEOL(m.Data.Lines.String()), g.opts.MaxLine)})
		return nil
	})
	if err != nil {
		return capabilities.Result{}, err
	}
	if r.timedOut && len(matches) == 0 {
		return capabilities.Result{}, fmt.Errorf("grep timed out after %s and was stopped; narrow the path or pattern, or raise timeoutMs", budget)
	}
	if !r.stopped && !r.timedOut && r.exitCode == 2 && len(matches) == 0 {
		return capabilities.Result{}, fmt.Errorf("grep failed: %s", rgError(r.stderr))
	}
	if !r.stopped && !r.timedOut && r.exitCode != 0 && r.exitCode != 1 && r.exitCode != 2 {
		return capabilities.Result{}, fmt.Errorf("grep failed (rg exit %d): %s", r.exitCode, rgError(r.stderr))
	}
	sort.SliceStable(matches, func(i, j int) bool {
		if matches[i].scope != matches[j].scope {
			return matches[i].scope < matches[j].scope
		}
		if matches[i].path != matches[j].path {
			return matches[i].path < matches[j].path
		}
		return matches[i].line < matches[j].line
	})
	var b strings.Builder
	for _, m := range matches {
		fmt.Fprintf(&b, "%s:%d: %s\n", m.path, m.line, m.text)
	}
	var notes []string
	if len(matches) == 0 && !r.timedOut {
		b.WriteString("No matches found.")
	} else {
		notes = append(notes, fmt.Sprintf("%d %s in %d %s", len(matches), plural(len(matches), "match", "matches"), len(files), plural(len(files), "file", "files")))
	}
	if r.stopped {
		notes = append(notes, fmt.Sprintf("results cut at %d matches; more exist — narrow the pattern, path or glob", maxTotal))
	}
	if len(capped) > 0 {
		notes = append(notes, fmt.Sprintf("%d %s reached the limit of %d matches per file", len(capped), plural(len(capped), "file", "files"), g.opts.PerFile))
	}
	if tooLong > 0 {
		notes = append(notes, fmt.Sprintf("%d matched %s too long to show", tooLong, plural(tooLong, "line", "lines")))
	}
	if r.timedOut {
		notes = append(notes, fmt.Sprintf("timed out after %s: results are partial", budget))
	}
	if r.exitCode == 2 && r.stderr != "" && !r.stopped {
		notes = append(notes, "some files could not be searched: "+firstLine(r.stderr))
	}
	if len(notes) > 0 {
		b.WriteString("[" + strings.Join(notes, "; ") + "]")
	}
	return capabilities.TextResult(strings.TrimSuffix(b.String(), "\n")), nil
}

// PresentCall implements capabilities.CallPresenter: a search card at the
// searched path.
func (g *Grep) PresentCall(args json.RawMessage) capabilities.CallView {
	var a grepArgs
	_ = json.Unmarshal(args, &a)
	title := "Grep " + strconv.Quote(a.Pattern)
	if a.Path != "" {
		title += " in " + a.Path
	}
	if a.Glob != "" {
		title += " (" + a.Glob + ")"
	}
	v := capabilities.CallView{Kind: capabilities.ViewGeneric, Title: title, ToolKind: capabilities.ToolKindSearch, RawInput: args}
	if a.Path != "" {
		v.Locations = []capabilities.Location{{Path: a.Path}}
	}
	return v
}

// rgError is rg's complaint, made readable: a regex error keeps its
// caret diagram.
func rgError(stderr string) string {
	if stderr == "" {
		return "ripgrep failed without a message"
	}
	if strings.Contains(stderr, "regex parse error") || strings.Contains(stderr, "error parsing") {
		return "invalid regular expression (use fixed_strings for a literal):\n" + stderr
	}
	return stderr
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func trimEOL(s string) string { return strings.TrimRight(s, "\r\n") }

// clip keeps at most n characters of s.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "… (line cut at " + strconv.Itoa(n) + " chars)"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
