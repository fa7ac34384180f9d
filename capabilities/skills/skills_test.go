package skills

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
}

func TestLoadCataloguesProjectBeforeUserAndSkipsMalformed(t *testing.T) {
	base := t.TempDir()
	project, user := filepath.Join(base, "p", ".claude", "skills"), filepath.Join(base, "home", ".claude", "skills")
	write(t, filepath.Join(project, "release", FileName), "---\nname: release\ndescription: Cut a release: tag, changelog, publish.\n---\n\n1. Run the tests.\n2. Tag.\n")
	write(t, filepath.Join(user, "release", FileName), "---\nname: release\ndescription: the user's older release skill\n---\nold")
	write(t, filepath.Join(user, "pdf", FileName), "\ufeff---\r\nname: pdf\r\ndescription: >\r\n  Fill PDF forms\r\n  with pdftk.\r\n---\r\nUse pdftk.\r\n")
	write(t, filepath.Join(user, "nofront", FileName), "# Just markdown\n")
	write(t, filepath.Join(user, "open", FileName), "---\nname: open\ndescription: x\n")
	write(t, filepath.Join(user, "badyaml", FileName), "---\nname: [unclosed\n---\nbody")
	write(t, filepath.Join(user, "noname", FileName), "---\ndescription: x\n---\nbody")
	write(t, filepath.Join(user, "nodesc", FileName), "---\nname: nodesc\n---\nbody")
	write(t, filepath.Join(user, "spaces", FileName), "---\nname: two words\ndescription: x\n---\n")
	write(t, filepath.Join(user, "huge", FileName), "---\nname: huge\ndescription: x\n---\n"+strings.Repeat("x", MaxSkillBytes))
	write(t, filepath.Join(user, "README.md"), "not a skill folder")
	require.NoError(t, os.MkdirAll(filepath.Join(user, "empty"), 0o755))

	c := Load(project, user, filepath.Join(base, "missing"))
	require.Len(t, c.Skills, 2)
	require.Equal(t, Skill{Name: "pdf", Description: "Fill PDF forms with pdftk.", Dir: filepath.Join(user, "pdf"), Path: filepath.Join(user, "pdf", FileName)}, c.Skills[0])
	require.Equal(t, "release", c.Skills[1].Name)
	require.Equal(t, filepath.Join(project, "release"), c.Skills[1].Dir, "the project's skill wins")

	problems := strings.Join(c.Problems, "\n")
	for _, want := range []string{
		"nofront/SKILL.md: no front matter (the file must start with a --- line) (skipped)",
		"open/SKILL.md: front matter is not closed by a --- line (skipped)",
		"badyaml/SKILL.md: front matter is not valid YAML:",
		"noname/SKILL.md: front matter has no name (skipped)",
		"nodesc/SKILL.md: front matter has no description (skipped)",
		`spaces/SKILL.md: name "two words" must be one word`,
		"huge/SKILL.md: larger than 256 KiB (skipped)",
	} {
		require.Contains(t, problems, want)
	}
	require.Len(t, c.Problems, 7)
}

func TestSkillToolLoadsOneSkillAndTheCatalogueListsThem(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "release", FileName), "---\nname: release\ndescription: |\n  Cut a release.\n  Tag it.\n---\n\n1. Run the tests.\n2. Tag.\n")
	tool := &Tool{Catalogue: Load(dir)}
	r := capabilities.NewRegistry(tool)

	out := r.Execute(context.Background(), nil, "c", "skill", `{"name":"release"}`)
	require.False(t, out.IsError)
	require.Equal(t, "<skill name=\"release\">\nBase directory for this skill's files: "+filepath.Join(dir, "release")+"\n\n1. Run the tests.\n2. Tag.\n</skill>", out.Content[0].Text)

	out = r.Execute(context.Background(), nil, "c", "skill", `{"name":"nope"}`)
	require.Equal(t, `Error: no skill named "nope"; available: release`, out.Content[0].Text)

	sec := tool.PromptSection()
	require.Equal(t, "skills:catalogue", sec.Name)
	require.True(t, strings.HasSuffix(sec.Text, "\n\n- release: Cut a release. Tag it."), sec.Text)
	require.NotContains(t, sec.Text, "Run the tests", "names and descriptions only")
	require.Empty(t, (&Tool{Catalogue: &Catalogue{}}).PromptSection().Text)

	v := tool.PresentCall([]byte(`{"name":"release"}`))
	require.Equal(t, "Skill release", v.Title)
}

func TestDirs(t *testing.T) {
	env := map[string]string{"HOME": "/h"}
	get := func(k string) string { return env[k] }
	require.Equal(t, []string{"/p/.claude/skills", "/h/.claude/skills"}, Dirs("/p", get))
	env["CLAUDE_CONFIG_DIR"] = "/c"
	require.Equal(t, []string{"/p/.claude/skills", "/c/skills"}, Dirs("/p", get))
}

func TestAskingForAMalformedSkillNamesWhyItWasSkipped(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "good", FileName), "---\nname: good\ndescription: fine\n---\nok")
	write(t, filepath.Join(dir, "deploy", FileName), "---\nname: deploy\n---\nno description")
	r := capabilities.NewRegistry(&Tool{Catalogue: Load(dir)})
	out := r.Execute(context.Background(), nil, "c", "skill", `{"name":"deploy"}`)
	require.True(t, out.IsError)
	require.Equal(t, `Error: no skill named "deploy"; available: good; skipped as malformed: deploy (front matter has no description)`, out.Content[0].Text)
}

// A project's SKILL.md that is a link out of the project, or lies in a
// skills folder that is one, is not catalogued (not even by folder name);
// a link inside works, and the user's own skills are read where they point.
func TestProjectSkillsResolveBeneathTheProject(t *testing.T) {
	base := t.TempDir()
	project, outside, user := filepath.Join(base, "p"), filepath.Join(base, "out"), filepath.Join(base, "home", "skills")
	skill := func(dir, name, desc string) {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), []byte("---\nname: "+name+"\ndescription: "+desc+"\n---\nbody of "+name+"\n"), 0o644))
	}
	skill(filepath.Join(outside, "secret"), "secret", "SECRET")
	skill(filepath.Join(outside, "dir", "hidden-folder"), "hidden", "HIDDEN")
	skill(filepath.Join(project, "docs", "inside"), "inside", "inside skill")
	skill(filepath.Join(outside, "mine"), "mine", "the user's")
	dir := filepath.Join(project, ".claude", "skills")
	for target, link := range map[string]string{
		filepath.Join(outside, "secret", FileName): filepath.Join(dir, "secret", FileName),
		"../../../docs/inside/SKILL.md":            filepath.Join(dir, "inside", FileName),
		filepath.Join(outside, "mine"):             filepath.Join(user, "mine"),
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
		require.NoError(t, os.Symlink(target, link))
	}
	c := Options{Root: project}.Load(dir, user)
	var names []string
	for _, s := range c.Skills {
		names = append(names, s.Name)
		body, err := c.Body(s)
		require.NoError(t, err)
		require.Equal(t, "body of "+s.Name, body)
	}
	require.Equal(t, []string{"inside", "mine"}, names)
	require.NotContains(t, strings.Join(c.Skipped, " "), "SECRET")

	// The whole skills folder a link out: nothing listed from it.
	other := filepath.Join(base, "q")
	require.NoError(t, os.MkdirAll(filepath.Join(other, ".claude"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(outside, "dir"), filepath.Join(other, ".claude", "skills")))
	c = Options{Root: other}.Load(filepath.Join(other, ".claude", "skills"))
	require.Empty(t, c.Skills)
	require.Empty(t, c.Skipped)
	require.Empty(t, c.Problems)
}
