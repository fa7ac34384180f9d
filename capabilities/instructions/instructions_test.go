package instructions

import (
	"context"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
}

func TestLoadWalksFromTheRepositoryRootToTheSessionRoot(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	cwd := filepath.Join(repo, "svc", "api")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	write(t, filepath.Join(base, "AGENTS.md"), "outside the repository: never read")
	write(t, filepath.Join(repo, "AGENTS.md"), "root rules")
	write(t, filepath.Join(repo, "CLAUDE.md"), "shadowed by AGENTS.md")
	write(t, filepath.Join(repo, "svc", "CLAUDE.md"), "svc rules (CLAUDE.md where there is no AGENTS.md)")
	write(t, filepath.Join(cwd, "AGENTS.md"), "api rules")
	user := filepath.Join(base, "home", ".claude", "CLAUDE.md")
	write(t, user, "user rules")

	files := Load(cwd, Options{UserFiles: []string{filepath.Join(base, "missing.md"), user}})
	var got []string
	for _, f := range files {
		got = append(got, f.Path+"="+f.Text)
	}
	require.Equal(t, []string{
		user + "=user rules",
		filepath.Join(repo, "AGENTS.md") + "=root rules",
		filepath.Join(repo, "svc", "CLAUDE.md") + "=svc rules (CLAUDE.md where there is no AGENTS.md)",
		filepath.Join(cwd, "AGENTS.md") + "=api rules",
	}, got)

	sec := Section(files)
	require.Equal(t, SectionName, sec.Name)
	require.True(t, strings.HasPrefix(sec.Text, "# Project instructions\n\n"))
	require.Contains(t, sec.Text, "\n\n## "+filepath.Join(cwd, "AGENTS.md")+"\n\napi rules")
	require.Empty(t, Section(nil).Text, "no files, no section")
}

func TestLoadWithoutARepositoryReadsOnlyTheSessionRoot(t *testing.T) {
	base := t.TempDir()
	cwd := filepath.Join(base, "p")
	write(t, filepath.Join(base, "AGENTS.md"), "parent")
	write(t, filepath.Join(cwd, "AGENTS.md"), "here")
	files := Load(cwd, Options{})
	require.Len(t, files, 1)
	require.Equal(t, "here", files[0].Text)
}

func TestAHugeInstructionsFileIsCutWithANote(t *testing.T) {
	cwd := t.TempDir()
	big := strings.Repeat("a rule that goes on and on\n", 5<<20/27+1) // ~5 MB
	write(t, filepath.Join(cwd, "AGENTS.md"), big)
	files := Load(cwd, Options{})
	require.Len(t, files, 1)
	require.Less(t, len(files[0].Text), DefaultMaxFileBytes+200)
	require.True(t, strings.HasSuffix(files[0].Text, "[AGENTS.md is "+strconv.Itoa(len(big))+" bytes; only its first 32768 are included here — read the file for the rest]"), files[0].Text[len(files[0].Text)-200:])
}

func TestUserCandidates(t *testing.T) {
	env := map[string]string{"HOME": "/h"}
	require.Equal(t, []string{"/h/.config/dsh-acp/AGENTS.md", "/h/.codex/AGENTS.md", "/h/.claude/CLAUDE.md"},
		UserCandidates(func(k string) string { return env[k] }))
	env = map[string]string{"HOME": "/h", "XDG_CONFIG_HOME": "/x", "CODEX_HOME": "/c", "CLAUDE_CONFIG_DIR": "/cl"}
	require.Equal(t, []string{"/x/dsh-acp/AGENTS.md", "/c/AGENTS.md", "/cl/CLAUDE.md"},
		UserCandidates(func(k string) string { return env[k] }))
}

type sess struct {
	cwd string
	log *session.Log
}

func (s sess) ID() string        { return "s" }
func (s sess) Cwd() string       { return s.cwd }
func (s sess) Log() *session.Log { return s.log }

func (s sess) Host() *capabilities.Host { return nil }

func TestNestedAddsASubdirectorysFileOnceAsContext(t *testing.T) {
	cwd := t.TempDir()
	write(t, filepath.Join(cwd, "AGENTS.md"), "root: already in the prompt")
	write(t, filepath.Join(cwd, "web", "AGENTS.md"), "web rules")
	write(t, filepath.Join(cwd, "web", "ui", "CLAUDE.md"), "ui rules")
	write(t, filepath.Join(cwd, "web", "ui", "app.ts"), "x")
	write(t, filepath.Join(cwd, "main.go"), "x")
	s := sess{cwd, session.NewLog(session.Header{ID: "s", Cwd: cwd}, func() int64 { return 0 }, nil)}
	n := &Nested{}
	review := func(name, args string, isErr bool) *pipeline.Context {
		d, err := n.ReviewResult(context.Background(), s, pipeline.Call{Name: name, Args: []byte(args)}, pipeline.Result{IsError: isErr})
		require.NoError(t, err)
		if d.Context != nil {
			s.log.Append(session.TypeContextMessage, session.Message{Content: d.Context.Content, Source: d.Context.Source})
		}
		return d.Context
	}
	require.Nil(t, review("read", `{"file_path":"main.go"}`, false), "the root's file is in the prompt")
	require.Nil(t, review("read", `{"file_path":"web/ui/app.ts"}`, true), "a failed read adds nothing")
	require.Nil(t, review("bash", `{"file_path":"web/ui/app.ts"}`, false))

	c := review("read", `{"file_path":"`+filepath.Join(cwd, "web", "ui", "app.ts")+`"}`, false)
	require.NotNil(t, c)
	require.Equal(t, Plugin, c.Source.Plugin)
	require.Len(t, c.Content, 2)
	require.Equal(t, "Instructions for files under this directory, from "+filepath.Join(cwd, "web", "AGENTS.md")+":\n\nweb rules", c.Content[0].Text)
	require.Equal(t, "Instructions for files under this directory, from "+filepath.Join(cwd, "web", "ui", "CLAUDE.md")+":\n\nui rules", c.Content[1].Text)

	require.Nil(t, review("read", `{"file_path":"web/ui/app.ts"}`, false), "added once")
	require.Nil(t, review("read", `{"file_path":"web/AGENTS.md"}`, false))
}

// A repository's instructions file that is a symbolic link out of the
// repository (or lies behind one) never reaches the prompt; a link that
// stays inside does, and so does the user's own file wherever it points.
func TestProjectFilesResolveBeneathTheRepository(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	cwd := filepath.Join(repo, "app")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	write(t, filepath.Join(base, "secret", "a.md"), "SECRET-A")
	write(t, filepath.Join(base, "secret", "sub", "AGENTS.md"), "SECRET-B")
	write(t, filepath.Join(base, "secret", "user.md"), "user rules")
	write(t, filepath.Join(repo, "docs", "agents.md"), "shared rules")
	require.NoError(t, os.MkdirAll(cwd, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(base, "secret", "a.md"), filepath.Join(repo, "AGENTS.md")))
	require.NoError(t, os.Symlink("../docs/agents.md", filepath.Join(cwd, "AGENTS.md")))
	require.NoError(t, os.Symlink(filepath.Join(base, "secret", "sub"), filepath.Join(cwd, "lnk")))
	user := filepath.Join(base, "home", ".claude", "CLAUDE.md")
	require.NoError(t, os.MkdirAll(filepath.Dir(user), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(base, "secret", "user.md"), user))

	files := Load(cwd, Options{UserFiles: []string{user}})
	var got []string
	for _, f := range files {
		got = append(got, f.Path+"="+f.Text)
	}
	require.Equal(t, []string{user + "=user rules", filepath.Join(cwd, "AGENTS.md") + "=shared rules"}, got)

	// Nested: a read through the link the user allowed does not bring the
	// AGENTS.md beside its target along.
	write(t, filepath.Join(base, "secret", "sub", "x.go"), "package x")
	s := sess{cwd, session.NewLog(session.Header{ID: "s", Cwd: cwd}, func() int64 { return 0 }, nil)}
	d, err := (&Nested{}).ReviewResult(context.Background(), s, pipeline.Call{Name: "read", Args: []byte(`{"file_path":"lnk/x.go"}`)}, pipeline.Result{})
	require.NoError(t, err)
	require.Nil(t, d.Context)
}
