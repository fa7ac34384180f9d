// Package skills is the skill system: SKILL.md folders (YAML front
// matter with name and description, then the instructions) found in the
// project's and the user's skill directories, a catalogue of names and
// descriptions in the system prompt, and the skill tool that loads one
// skill's instructions into the conversation.
package skills

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// FileName is a skill's file inside its folder.
const FileName = "SKILL.md"

// MaxSkillBytes caps a SKILL.md that is read.
const MaxSkillBytes = 256 << 10

// Skill is one catalogued skill.
type Skill struct {
	// Name is the skill's name (front matter "name").
	Name string
	// Description says when to use it (front matter "description").
	Description string
	// Dir is the skill's folder; its other files are the skill's
	// resources.
	Dir string
	// Path is the SKILL.md file.
	Path string
	// Root is the project root a project's skill must resolve beneath
	// (its SKILL.md is read through the file tools' confined access, so a
	// symbolic link out of the project is never followed); empty for the
	// user's own skills, read as they are.
	Root string
}

// Catalogue is the skills a session offers, sorted by name.
type Catalogue struct {
	Skills []Skill
	// Problems name the SKILL.md files that were skipped, and why.
	Problems []string
	// Skipped names the skipped skill folders (without their directory),
	// and why, for the model.
	Skipped []string

	confined capabilities.Confined // reads a project's skills
}

// Options locate the project's skills.
type Options struct {
	// Root is the project root: skill directories beneath it are the
	// project's, and their SKILL.md files must resolve beneath it (one
	// that is, or lies behind, a symbolic link out is skipped). Empty: every
	// directory is read as it is.
	Root string
	// Confined is the file tools' confined access (nil: os.Root).
	Confined capabilities.Confined
}

// Lookup returns the skill named name.
func (c *Catalogue) Lookup(name string) (Skill, bool) {
	for _, s := range c.Skills {
		if s.Name == name {
			return s, true
		}
	}
	return Skill{}, false
}

// Dirs returns the skill directories of a session, in precedence order:
// the project's (<cwd>/.claude/skills) before the user's
// ($CLAUDE_CONFIG_DIR/skills, else ~/.claude/skills).
func Dirs(cwd string, getenv func(string) string) []string {
	dirs := []string{filepath.Join(cwd, ".claude", "skills")}
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return append(dirs, filepath.Join(d, "skills"))
	}
	if h := getenv("HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, ".claude", "skills"))
	}
	return dirs
}

// Load reads the skills of dirs as they are (no project root; see
// Options.Load).
func Load(dirs ...string) *Catalogue { return Options{}.Load(dirs...) }

// Load reads the skills of dirs: each direct subfolder holding a SKILL.md.
// A name found twice keeps the first directory's skill. Missing
// directories are fine; malformed files, and a project's that resolve
// outside its root, are skipped and named in Problems.
func (o Options) Load(dirs ...string) *Catalogue {
	c := &Catalogue{confined: o.Confined}
	seen := map[string]bool{}
	for _, dir := range dirs {
		root := ""
		if o.Root != "" && beneath(filepath.Clean(dir), filepath.Clean(o.Root)) {
			root = filepath.Clean(o.Root)
			if !resolvesBeneath(dir, root) {
				continue // a link out: not even the folder names are listed
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				c.Problems = append(c.Problems, fmt.Sprintf("%s: %v", dir, err))
			}
			continue
		}
		for _, e := range entries {
			sub := filepath.Join(dir, e.Name())
			if st, err := os.Stat(sub); err != nil || !st.IsDir() {
				continue
			}
			path := filepath.Join(sub, FileName)
			if _, err := os.Stat(path); err != nil {
				continue
			}
			s, _, err := c.parseFile(root, path)
			if err != nil {
				c.Problems = append(c.Problems, fmt.Sprintf("%s: %v (skipped)", path, err))
				c.Skipped = append(c.Skipped, fmt.Sprintf("%s (%v)", e.Name(), err))
				continue
			}
			if seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			c.Skills = append(c.Skills, s)
		}
	}
	sort.Slice(c.Skills, func(i, j int) bool { return c.Skills[i].Name < c.Skills[j].Name })
	return c
}

// Body returns the instructions of a skill: its SKILL.md after the front
// matter, read again (a project's beneath its root, through os.Root).
func Body(s Skill) (string, error) { return (&Catalogue{}).Body(s) }

// Body returns the instructions of a skill of the catalogue: its SKILL.md
// after the front matter, read again the way the catalogue read it.
func (c *Catalogue) Body(s Skill) (string, error) {
	_, body, err := c.parseFile(s.Root, s.Path)
	return body, err
}

// parseFile reads and parses one SKILL.md, beneath root unless root is
// empty.
func (c *Catalogue) parseFile(root, path string) (Skill, string, error) {
	var data []byte
	if root != "" {
		b, _, err := capabilities.ReadBeneath(context.Background(), c.confined, root, path, MaxSkillBytes+1)
		if err != nil {
			return Skill{}, "", err
		}
		data = b
	} else {
		f, err := os.Open(path)
		if err != nil {
			return Skill{}, "", err
		}
		defer func() { _ = f.Close() }()
		if data, err = io.ReadAll(io.LimitReader(f, MaxSkillBytes+1)); err != nil {
			return Skill{}, "", err
		}
	}
	if len(data) > MaxSkillBytes {
		return Skill{}, "", fmt.Errorf("larger than %d KiB", MaxSkillBytes>>10)
	}
	s, body, err := parse(data)
	if err != nil {
		return Skill{}, "", err
	}
	s.Path, s.Dir, s.Root = path, filepath.Dir(path), root
	return s, body, nil
}

// resolvesBeneath reports whether dir, symbolic links resolved, lies
// beneath root (resolved too); a missing dir does not.
func resolvesBeneath(dir, root string) bool {
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	r, err := filepath.EvalSymlinks(root)
	return err == nil && beneath(d, r)
}

// beneath reports whether the clean path p is root or lies below it.
func beneath(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
}

// parse splits front matter from body and checks name and description.
func parse(data []byte) (Skill, string, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return Skill{}, "", errors.New("no front matter (the file must start with a --- line)")
	}
	rest := text[4:]
	end := strings.Index(rest, "\n---")
	if end < 0 {
		return Skill{}, "", errors.New("front matter is not closed by a --- line")
	}
	front, body := rest[:end], rest[end+4:]
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		body = body[i+1:]
	} else {
		body = ""
	}
	var fm struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
	}
	if err := yaml.Unmarshal([]byte(front), &fm); err != nil {
		// Hand-written front matter often has an unquoted ": " in its
		// description, which YAML rejects; plain one-line values are
		// still read.
		var ok bool
		if fm.Name, fm.Description, ok = plain(front); !ok {
			return Skill{}, "", fmt.Errorf("front matter is not valid YAML: %w", err)
		}
	}
	fm.Name, fm.Description = strings.TrimSpace(fm.Name), strings.TrimSpace(fm.Description)
	switch {
	case fm.Name == "":
		return Skill{}, "", errors.New("front matter has no name")
	case fm.Description == "":
		return Skill{}, "", errors.New("front matter has no description")
	case strings.ContainsAny(fm.Name, " \t\n/\\"):
		return Skill{}, "", fmt.Errorf("name %q must be one word (letters, digits, - and _)", fm.Name)
	}
	return Skill{Name: fm.Name, Description: fm.Description}, strings.TrimSpace(body), nil
}

// plain reads name and description from front matter lines of the form
// "key: value" whose values are plain one-line text.
func plain(front string) (name, desc string, ok bool) {
	for _, line := range strings.Split(front, "\n") {
		k, v, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		v = strings.TrimSpace(v)
		if v == "" || strings.ContainsAny(v[:1], "[{|>\"'&*!%@`") {
			continue
		}
		switch k {
		case "name":
			name = v
		case "description":
			desc = v
		}
	}
	return name, desc, name != "" && desc != ""
}
