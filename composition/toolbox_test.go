package composition

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
)

type toolboxEnv struct {
	cwd string
	log *session.Log
}

func (e toolboxEnv) Cwd() string       { return e.cwd }
func (e toolboxEnv) Log() *session.Log { return e.log }

func (e toolboxEnv) Host() *capabilities.Host { return nil }

func names(r *capabilities.Registry) []string {
	var n []string
	for _, t := range r.Tools() {
		n = append(n, t.Name())
	}
	return n
}

func TestDefaultToolboxMountsSearchWebSkillsAndInstructions(t *testing.T) {
	cwd, home, spill := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(cwd, "AGENTS.md"), []byte("Use tabs."), 0o644))
	env := toolboxEnv{cwd, session.NewLog(session.Header{ID: "sess-1", Cwd: cwd}, func() int64 { return 0 }, nil)}
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	c, _ := Builtin("default")
	r := c.Registry(env, Deps{Getenv: getenv, SpillRoot: spill})
	got := names(r)
	for _, want := range []string{"glob", "grep", "web_fetch"} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "skill", "no skills, no skill tool")
	require.NotContains(t, got, "web_search", "no provider by default")
	require.Len(t, r.Sections(), 1)
	require.Contains(t, r.Sections()[0].Text, "## "+filepath.Join(cwd, "AGENTS.md")+"\n\nUse tabs.")

	skill := filepath.Join(home, ".claude", "skills", "release", "SKILL.md")
	require.NoError(t, os.MkdirAll(filepath.Dir(skill), 0o755))
	require.NoError(t, os.WriteFile(skill, []byte("---\nname: release\ndescription: Cut a release\n---\nTag it."), 0o644))
	c.Web.Search = "brave"
	r = c.Registry(env, Deps{Getenv: func(k string) string {
		if k == "BRAVE_API_KEY" {
			return "k"
		}
		return getenv(k)
	}, SpillRoot: spill})
	require.Contains(t, names(r), "skill")
	require.Contains(t, names(r), "web_search")

	// Upstream compositions keep their tool lists.
	for _, name := range BuiltinNames()[1:] {
		u, _ := Builtin(name)
		for _, n := range names(u.Registry(env, Deps{Getenv: getenv})) {
			require.NotContains(t, []string{"glob", "grep", "web_fetch", "web_search", "skill"}, n, name)
		}
	}
}

func TestDefaultSpillsLargeResultsUnderTheSessionAndReadsThemBack(t *testing.T) {
	cwd, spill := t.TempDir(), t.TempDir()
	big := strings.Repeat("0123456789abcdef\n", 10000) // 170 KB
	require.NoError(t, os.WriteFile(filepath.Join(cwd, "big.txt"), []byte(big), 0o644))
	log := session.NewLog(session.Header{ID: "sess-2", Cwd: cwd}, func() int64 { return 0 }, nil)
	log.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	env := toolboxEnv{cwd, log}
	c, _ := Builtin("default")
	confiner, cerr := sandbox.NewDefaultProvider()
	require.NoError(t, cerr)
	r := c.Registry(env, Deps{Getenv: func(string) string { return "" }, SpillRoot: spill, Confiner: confiner})

	out := r.Execute(context.Background(), env, "call_1", "bash", `{"command":"cat big.txt; echo done","description":"show"}`)
	require.False(t, out.IsError, out.Content[0].Text)
	view := out.Content[0].Text
	path := filepath.Join(spill, "sess-2", "call_1.txt")
	require.Contains(t, view, "The whole result is saved at "+path)
	require.Less(t, len(view), capabilities.DefaultSpillCap+1000)
	saved, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(saved), capabilities.DefaultSpillCap, "bash's whole result")
	require.Contains(t, string(saved), "done\n")
	require.Contains(t, view[len(view)-200:], "done\n", "the view keeps the end")

	// read reaches the spill file outside the root without asking.
	out = r.Execute(context.Background(), env, "call_2", "read", `{"file_path":"`+path+`","limit":2}`)
	require.False(t, out.IsError, out.Content[0].Text)
	require.Contains(t, out.Content[0].Text, "\n2: 0123456789abcdef\n")
	// Elsewhere outside the root still goes to the gate.
	other := filepath.Join(spill, "elsewhere.txt")
	require.NoError(t, os.WriteFile(other, []byte("x"), 0o644))
	out = r.Execute(context.Background(), env, "call_3", "read", `{"file_path":"`+other+`"}`)
	require.True(t, out.IsError, out.Content[0].Text)

	// A link planted in the spill directory (by whatever could write there)
	// is not a spill file: it leads outside, so it goes to the gate too,
	// and its target never reaches the model.
	secret := filepath.Join(t.TempDir(), "id_rsa")
	require.NoError(t, os.WriteFile(secret, []byte("PRIVATE-KEY"), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(spill, "sess-2", "call_9.txt")))
	out = r.Execute(context.Background(), env, "call_4", "read", `{"file_path":"`+filepath.Join(spill, "sess-2", "call_9.txt")+`"}`)
	require.True(t, out.IsError, out.Content[0].Text)
	require.NotContains(t, out.Content[0].Text, "PRIVATE-KEY")
	// Saving a result under that name replaces the link, never writes
	// through it.
	out = r.Execute(context.Background(), env, "call_9", "bash", `{"command":"cat big.txt","description":"show"}`)
	require.False(t, out.IsError, out.Content[0].Text)
	key, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "PRIVATE-KEY", string(key))
	fi, err := os.Lstat(filepath.Join(spill, "sess-2", "call_9.txt"))
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular())
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestCompactionOnlyInTheDefaultComposition(t *testing.T) {
	c, _ := Builtin("default")
	require.Equal(t, &agent.Compaction{Window: 131072, Threshold: 0.8, MaxTokens: 4096}, c.compaction())
	for _, name := range BuiltinNames()[1:] {
		u, _ := Builtin(name)
		require.Nil(t, u.compaction(), name)
		require.False(t, u.ParallelReads, name)
		require.False(t, u.Hygiene, name)
	}
}

func TestSkillsAreSlashCommands(t *testing.T) {
	cwd, home := t.TempDir(), t.TempDir()
	skill := filepath.Join(cwd, ".claude", "skills", "release", "SKILL.md")
	require.NoError(t, os.MkdirAll(filepath.Dir(skill), 0o755))
	require.NoError(t, os.WriteFile(skill, []byte("---\nname: release\ndescription: Cut a release\n---\nTag it."), 0o644))
	init := filepath.Join(cwd, ".claude", "skills", "init", "SKILL.md")
	require.NoError(t, os.MkdirAll(filepath.Dir(init), 0o755))
	require.NoError(t, os.WriteFile(init, []byte("---\nname: init\ndescription: shadowed by /init\n---\nx"), 0o644))
	cmds := promptCommands(func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	})(cwd)
	var names []string
	for _, c := range cmds {
		names = append(names, c.Name)
		if c.Name == "release" {
			require.Equal(t, "Cut a release", c.Description)
			require.Equal(t, "Follow the skill \"release\" (its files are in "+filepath.Dir(skill)+"):\n\nTag it.\n\nnow", c.Expand("now"))
		}
	}
	require.Equal(t, []string{"init", "release"}, names)
}
