// Package instructions gives the model the project's instructions: the
// AGENTS.md (else CLAUDE.md) files from the session root up to the
// repository root, and the user's own file, as a system prompt section;
// and, as a post-execute pipeline member, the AGENTS.md of a subdirectory
// the model reads a file in, once per session, as context.
package instructions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	// Confined resolves the project's files beneath the repository root
	// (the file tools' access in a composition; nil: os.Root). A file
	// that is, or lies behind, a symbolic link leading out of it is
	// skipped: the repository cannot hand the model a file from
	// elsewhere. The user's own files (UserFiles) are read as they are.
	Confined capabilities.Confined
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
// Unreadable files, and project files that resolve outside the repository
// root, are skipped.
func Load(cwd string, o Options) []File {
	var files []File
	for _, p := range o.UserFiles {
		if f, ok := read(p, o.max()); ok {
			files = append(files, f)
			break
		}
	}
	dirs := chain(cwd)
	project := reader{confined: o.Confined, root: dirs[0]}
	for _, dir := range dirs {
		if f, ok := project.readDir(dir, o.max()); ok {
			files = append(files, f)
		}
	}
	return files
}

// reader reads a project's instructions files beneath root.
type reader struct {
	confined capabilities.Confined
	root     string
}

// readDir reads dir's instructions file, if any: the first name that
// exists beneath the root. A name that leads out is skipped, not replaced
// by the next (CLAUDE.md does not stand in for an AGENTS.md link).
func (r reader) readDir(dir string, limit int) (File, bool) {
	for _, n := range names {
		p := filepath.Join(dir, n)
		b, size, err := capabilities.ReadBeneath(context.Background(), r.confined, r.root, p, int64(limit))
		switch {
		case err == nil:
			return file(p, b, size, limit), true
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, capabilities.ErrNotRegular):
			continue
		}
		return File{}, false
	}
	return File{}, false
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

// read reads at most limit bytes of a regular file at p, as it is (the
// user's own files).
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
	return file(p, b, st.Size(), limit), true
}

// file is the instructions file p of size bytes whose first bytes are b.
func file(p string, b []byte, size int64, limit int) File {
	text := strings.ToValidUTF8(string(b), "")
	if size > int64(limit) {
		if i := strings.LastIndexByte(text, '\n'); i > 0 {
			text = text[:i]
		}
		text += fmt.Sprintf("\n\n[%s is %d bytes; only its first %d are included here — read the file for the rest]", filepath.Base(p), size, limit)
	}
	return File{Path: p, Text: strings.TrimSpace(text)}
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
