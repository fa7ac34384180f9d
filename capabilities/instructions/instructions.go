// Package instructions gives the model the project's instructions: the
// AGENTS.md (else CLAUDE.md) files from the session root up to the
// repository root, and the user's own file, as a system prompt section;
// and, as a post-execute pipeline member, the AGENTS.md of a subdirectory
// the model reads a file in, once per session, as context.
package instructions

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// DefaultMaxFileBytes caps what one instructions file contributes.
const DefaultMaxFileBytes = 32 << 10

// SectionName is the prompt section's name (its request-header label).
const SectionName = "project:instructions"

// SectionOrder places the section after the persona and before the tool
// sections.
const SectionOrder = 20

// Names are the file names looked for in a directory, in preference
// order: the first that exists is taken.
var names = [...]string{"AGENTS.md", "CLAUDE.md"}

// File is one instructions file.
type File struct {
	// Path is the file's absolute path.
	Path string
	// Text is its content, cut at the byte cap with a note.
	Text string
}

// Options locate and bound the files.
type Options struct {
	// UserFiles are the user-level candidates, the first existing one is
	// taken (see UserCandidates).
	UserFiles []string
	// MaxFileBytes caps one file (zero: DefaultMaxFileBytes).
	MaxFileBytes int
}

// UserCandidates returns the user-level instructions files in preference
// order: $XDG_CONFIG_HOME/dsh-acp/AGENTS.md (else ~/.config/…), Codex's
// $CODEX_HOME/AGENTS.md (else ~/.codex/AGENTS.md), Claude Code's
// $CLAUDE_CONFIG_DIR/CLAUDE.md (else ~/.claude/CLAUDE.md).
func UserCandidates(getenv func(string) string) []string {
	home := getenv("HOME")
	cfg := getenv("XDG_CONFIG_HOME")
	if cfg == "" && home != "" {
		cfg = filepath.Join(home, ".config")
	}
	codex := getenv("CODEX_HOME")
	if codex == "" && home != "" {
		codex = filepath.Join(home, ".codex")
	}
	claude := getenv("CLAUDE_CONFIG_DIR")
	if claude == "" && home != "" {
		claude = filepath.Join(home, ".claude")
	}
	var out []string
	for _, p := range []string{joinIf(cfg, "dsh-acp", "AGENTS.md"), joinIf(codex, "AGENTS.md"), joinIf(claude, "CLAUDE.md")} {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

func joinIf(dir string, elem ...string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(append([]string{dir}, elem...)...)
}

// Load returns the instructions for a session rooted at cwd: the user's
// file first, then the project's from the repository root (the nearest
// ancestor holding .git; cwd alone when there is none) down to cwd.
// Unreadable files are skipped.
func Load(cwd string, o Options) []File {
	var files []File
	for _, p := range o.UserFiles {
		if f, ok := read(p, o.max()); ok {
			files = append(files, f)
			break
		}
	}
	for _, dir := range chain(cwd) {
		if f, ok := readDir(dir, o.max()); ok {
			files = append(files, f)
		}
	}
	return files
}

func (o Options) max() int {
	if o.MaxFileBytes <= 0 {
		return DefaultMaxFileBytes
	}
	return o.MaxFileBytes
}

// chain lists the directories from the repository root down to cwd.
func chain(cwd string) []string {
	cwd = filepath.Clean(cwd)
	dirs := []string{cwd}
	for d := cwd; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			return []string{cwd} // no repository: the session root only
		}
		d = parent
		dirs = append(dirs, d)
	}
	for i, j := 0, len(dirs)-1; i < j; i, j = i+1, j-1 {
		dirs[i], dirs[j] = dirs[j], dirs[i]
	}
	return dirs
}

// readDir reads dir's instructions file, if any.
func readDir(dir string, limit int) (File, bool) {
	for _, n := range names {
		if f, ok := read(filepath.Join(dir, n), limit); ok {
			return f, true
		}
	}
	return File{}, false
}

// read reads at most limit bytes of a regular file at p.
func read(p string, limit int) (File, bool) {
	fh, err := os.Open(p)
	if err != nil {
		return File{}, false
	}
	defer func() { _ = fh.Close() }()
	st, err := fh.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return File{}, false
	}
	b, err := io.ReadAll(io.LimitReader(fh, int64(limit)))
	if err != nil && !errors.Is(err, io.EOF) {
		return File{}, false
	}
	text := strings.ToValidUTF8(string(b), "")
	if st.Size() > int64(limit) {
		if i := strings.LastIndexByte(text, '\n'); i > 0 {
			text = text[:i]
		}
		text += fmt.Sprintf("\n\n[%s is %d bytes; only its first %d are included here — read the file for the rest]", filepath.Base(p), st.Size(), limit)
	}
	return File{Path: p, Text: strings.TrimSpace(text)}, true
}

// Section renders files as the prompt section (empty text when there are
// none, which drops the section).
func Section(files []File) capabilities.Section {
	if len(files) == 0 {
		return capabilities.Section{Name: SectionName, Order: SectionOrder}
	}
	var b strings.Builder
	b.WriteString("# Project instructions\n\nThe user and the project left these instructions (AGENTS.md / CLAUDE.md). " +
		"Follow them; more specific files (deeper directories) win over general ones.")
	for _, f := range files {
		fmt.Fprintf(&b, "\n\n## %s\n\n%s", f.Path, f.Text)
	}
	return capabilities.Section{Name: SectionName, Order: SectionOrder, Text: b.String()}
}
