package composition_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/composition"
)

// A hostile repository ships symbolic links out of itself where the agent
// reads files on its own: the AGENTS.md of the repository root, the
// session root's CLAUDE.md, a nested AGENTS.md (added when the model reads
// beside it), a SKILL.md (catalogue and body), a .claude/commands file,
// and a search path through a link and back ("lnk/.."). Over the wire,
// with the default composition, none of the outside secrets reaches the
// model or the editor; the links that stay inside and the user's own
// files (which may point anywhere) still work.
func TestRepositoryLinksOutNeverReachTheModel(t *testing.T) {
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("ripgrep (rg) is not installed: the search half of this test needs it")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	repo, outside, home := filepath.Join(base, "repo"), filepath.Join(base, "outside"), filepath.Join(base, "home")
	cwd := filepath.Join(repo, "app")
	put := func(p, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	link := func(target, p string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.Symlink(target, p))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	secrets := map[string]string{
		"root.md":    "SECRET-ROOT-AGENTS",
		"app.md":     "SECRET-APP-CLAUDE",
		"nested.md":  "SECRET-NESTED-AGENTS",
		"skill.md":   "---\nname: deploy\ndescription: SECRET-SKILL-DESCRIPTION\n---\nSECRET-SKILL-BODY\n",
		"command.md": "---\ndescription: SECRET-COMMAND-DESCRIPTION\n---\nSECRET-COMMAND-BODY\n",
		"deep/x.txt": "SECRET-GREP",
		"user.md":    "USER-RULES",
	}
	for n, s := range secrets {
		put(filepath.Join(outside, n), s)
	}
	link(filepath.Join(outside, "root.md"), filepath.Join(repo, "AGENTS.md"))
	link(filepath.Join(outside, "app.md"), filepath.Join(cwd, "CLAUDE.md"))
	link(filepath.Join(outside, "nested.md"), filepath.Join(cwd, "sub", "AGENTS.md"))
	put(filepath.Join(cwd, "sub", "x.go"), "package sub\n")
	link(filepath.Join(outside, "skill.md"), filepath.Join(cwd, ".claude", "skills", "deploy", "SKILL.md"))
	link(filepath.Join(outside, "command.md"), filepath.Join(cwd, ".claude", "commands", "leak.md"))
	link(filepath.Join(outside, "deep"), filepath.Join(cwd, "lnk"))
	// Controls: links that stay inside, and the user's own file.
	put(filepath.Join(cwd, "docs", "good-skill.md"), "---\nname: good\ndescription: GOOD-SKILL\n---\nGOOD-SKILL-BODY\n")
	link("../../../docs/good-skill.md", filepath.Join(cwd, ".claude", "skills", "good", "SKILL.md"))
	put(filepath.Join(cwd, "docs", "ok.md"), "OK-COMMAND-BODY $ARGUMENTS\n")
	link("../../docs/ok.md", filepath.Join(cwd, ".claude", "commands", "ok.md"))
	link(filepath.Join(outside, "user.md"), filepath.Join(home, ".claude", "CLAUDE.md"))

	var mu sync.Mutex
	var asked []string
	answer := agentAnswer(func(method string, params json.RawMessage) any {
		if method != "session/request_permission" {
			return nil
		}
		mu.Lock()
		asked = append(asked, string(params))
		mu.Unlock()
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject-once"}}
	})
	p := newProvider()
	p.script("go",
		toolCall{"read", `{"file_path":"sub/x.go"}`},
		toolCall{"skill", `{"name":"deploy"}`},
		toolCall{"skill", `{"name":"good"}`},
		toolCall{"grep", `{"pattern":"SECRET","path":"lnk/.."}`},
		toolCall{"glob", `{"pattern":"*","path":"lnk/.."}`},
	)
	srv := serveWith(t, "default", openStore(t, t.TempDir()), cwd, p, map[string]any{}, answer, func(so *composition.ServerOptions) {
		so.Getenv = func(k string) string {
			switch k {
			case "HOME":
				return home
			case "XDG_STATE_HOME":
				return filepath.Join(home, "state")
			}
			return ""
		}
	})
	mark := srv.c.mark()
	sid := srv.newSession(t, cwd).SessionID
	var commands string
	require.Eventually(t, func() bool {
		for _, u := range updates(srv.c.since(mark), sid) {
			if strings.Contains(u, `"available_commands_update"`) {
				commands = u
				return true
			}
		}
		return false
	}, waitFor, 10*time.Millisecond)
	require.Contains(t, commands, `"name":"ok"`, "a command linked inside the project is offered")
	require.Contains(t, commands, `"name":"good"`, "a skill linked inside the project is offered")

	stop, _ := srv.prompt(t, sid, "go")
	require.Equal(t, "end_turn", stop)
	_, _ = srv.prompt(t, sid, "/leak now")
	stop, _ = srv.prompt(t, sid, "/ok now")
	require.Equal(t, "end_turn", stop)

	var sent strings.Builder
	for _, r := range p.requestsFor(sid) {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		sent.Write(b)
	}
	model := sent.String()
	require.Contains(t, model, "USER-RULES", "the user's own instructions, wherever they point")
	require.Contains(t, model, "GOOD-SKILL-BODY", "a skill linked inside loads")
	require.Contains(t, model, "OK-COMMAND-BODY now", "a command linked inside expands")
	wire := strings.Join(srv.c.snapshot(), "\n")
	for _, s := range []string{"SECRET-ROOT-AGENTS", "SECRET-APP-CLAUDE", "SECRET-NESTED-AGENTS", "SECRET-SKILL-DESCRIPTION",
		"SECRET-SKILL-BODY", "SECRET-COMMAND-DESCRIPTION", "SECRET-COMMAND-BODY", "SECRET-GREP"} {
		require.False(t, strings.Contains(model, s), "the model received %s from outside the repository", s)
		require.False(t, strings.Contains(wire, s), "the editor received %s from outside the repository", s)
	}
	// The searches through "lnk/.." were asked about as what they read: the
	// directory outside, never the session root.
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, asked, 2, "grep and glob each asked")
	for _, a := range asked {
		require.Contains(t, a, `asks to read \"`+outside+`\": it is outside the session root`)
	}
}
