package composition_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/composition"
)

// Tests of what a Zed user sends: prompt context, images, slash commands,
// project permissions and the API key (editor_test.go: what they see).

// Context the editor attaches reaches the model as the files' content,
// named by path: an @-mention (resource_link) of a project file and an
// embedded resource; embeddedContext is advertised; an image gets a clear
// refusal.
func TestPromptContextReachesTheModel(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	p := newProvider()
	srv := serve(t, "default", openStore(t, root), ws, p, map[string]any{}, nil)
	var init struct {
		Result struct {
			AgentCapabilities struct {
				PromptCapabilities struct{ Image, EmbeddedContext bool } `json:"promptCapabilities"`
			} `json:"agentCapabilities"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(srv.c.snapshot()[0]), &init))
	assert.True(t, init.Result.AgentCapabilities.PromptCapabilities.EmbeddedContext)
	assert.False(t, init.Result.AgentCapabilities.PromptCapabilities.Image)

	sid := srv.newSession(t, ws).SessionID
	_, ch := srv.c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{
		{"type": "text", "text": "explain "},
		{"type": "resource_link", "name": "main.go", "uri": "file://" + filepath.Join(ws, "main.go")},
		{"type": "text", "text": " and "},
		{"type": "resource", "resource": map[string]any{"uri": "file:///elsewhere/notes.md", "text": "# Notes\nkeep it short", "mimeType": "text/markdown"}},
		{"type": "resource_link", "name": "gone.txt", "uri": "file://" + filepath.Join(ws, "gone.txt")},
	}})
	f := srv.c.await(ch, "session/prompt")
	require.Empty(t, string(f.Error))
	reqs := p.requestsFor(sid)
	require.Len(t, reqs, 1)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	text := last.Content[0].Text
	assert.Contains(t, text, "explain \n<file path=\""+filepath.Join(ws, "main.go")+"\">\npackage main\n\nfunc main() {}\n</file>\n and ")
	assert.Contains(t, text, "<file path=\"/elsewhere/notes.md\">\n# Notes\nkeep it short\n</file>")
	assert.Contains(t, text, "[linked: "+filepath.Join(ws, "gone.txt")+", not readable: no such file]")

	_, ch = srv.c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{
		{"type": "text", "text": "what is this?"}, {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
	}})
	f = srv.c.await(ch, "session/prompt")
	assert.Contains(t, string(f.Error), "does not take image input")
}

// The slash commands a Zed user gets: /undo, /mode, /model,
// /clear-permissions, /init and their own prompt commands (Claude Code's
// .claude/commands, Codex's prompts) with $ARGUMENTS.
func TestSlashCommands(t *testing.T) {
	root, ws, home := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".claude", "commands"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".claude", "commands", "review.md"),
		[]byte("---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $ARGUMENTS for bugs.\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".codex", "prompts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".codex", "prompts", "fix.md"), []byte("# Fix the failing tests\nRun them, then fix them.\n"), 0o644))
	p := newProvider()
	srv := serveWith(t, "default", openStore(t, root), ws, p, map[string]any{}, nil, func(so *composition.ServerOptions) {
		so.Getenv = func(k string) string {
			switch k {
			case "HOME":
				return home
			case "XDG_STATE_HOME":
				return filepath.Join(home, "state")
			}
			return ""
		}
		so.Models = []composition.ModelConfig{{ID: defaultModel}, {ID: "deepseek-v4-pro"}}
	})
	mark := srv.c.mark()
	sid := srv.newSession(t, ws).SessionID
	var names []string
	var hint string
	require.Eventually(t, func() bool { return len(updates(srv.c.since(mark), sid)) > 0 }, waitFor, 10*time.Millisecond)
	var ac struct {
		AvailableCommands []struct {
			Name  string
			Input *struct{ Hint string }
		} `json:"availableCommands"`
	}
	require.NoError(t, json.Unmarshal([]byte(updates(srv.c.since(mark), sid)[0]), &ac))
	for _, c := range ac.AvailableCommands {
		names = append(names, c.Name)
		if c.Name == "review" && c.Input != nil {
			hint = c.Input.Hint
		}
	}
	assert.Equal(t, []string{"undo", "mode", "model", "clear-permissions", "compact", "init", "fix", "review"}, names)
	assert.Equal(t, "<file>", hint)

	stop, _ := srv.prompt(t, sid, "/review main.go")
	require.Equal(t, "end_turn", stop)
	reqs := p.requestsFor(sid)
	require.Len(t, reqs, 1)
	msgs := reqs[0].Messages
	assert.Equal(t, "Review main.go for bugs.", msgs[len(msgs)-1].Content[0].Text)

	stop, lines := srv.prompt(t, sid, "/mode plan")
	require.Equal(t, "end_turn", stop)
	assert.Contains(t, updates(lines, sid), `{"sessionUpdate":"current_mode_update","currentModeId":"plan"}`)
	ups := optionUpdates(lines, sid)
	require.NotEmpty(t, ups)
	assert.Equal(t, "plan", current(t, specOptions(t, ups[len(ups)-1]), "mode"))

	stop, lines = srv.prompt(t, sid, "/model deepseek-v4-pro")
	require.Equal(t, "end_turn", stop)
	ups = optionUpdates(lines, sid)
	require.NotEmpty(t, ups)
	assert.Equal(t, "deepseek-v4-pro", current(t, specOptions(t, ups[len(ups)-1]), "model"))
	assert.Len(t, p.requestsFor(sid), 1, "commands do not call the model")
}

// "Always allow in this project" is remembered in the user's state
// directory across sessions and servers, and /clear-permissions forgets
// it.
func TestProjectPermissionsAndClearing(t *testing.T) {
	root, ws, home, outside := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	env := func(so *composition.ServerOptions) {
		so.Getenv = func(k string) string {
			switch k {
			case "HOME":
				return home
			case "XDG_STATE_HOME":
				return filepath.Join(home, "state")
			}
			return ""
		}
	}
	var asked []permissionCall
	answer := func(method string, params json.RawMessage) any {
		if method != "session/request_permission" {
			return nil
		}
		var pc permissionCall
		require.NoError(t, json.Unmarshal(params, &pc))
		asked = append(asked, pc)
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-project"}}
	}
	p := newProvider()
	srv := serveWith(t, "default", openStore(t, root), ws, p, map[string]any{}, answer, env)
	args, _ := json.Marshal(map[string]any{"command": "touch " + outside + "/x", "description": "touch outside",
		"sandbox_permissions": "danger-full-access", "justification": "needed"})
	p.script("touch", toolCall{Name: "bash", Args: string(args)})
	sid := srv.newSession(t, ws).SessionID
	stop, _ := srv.prompt(t, sid, "touch")
	require.Equal(t, "end_turn", stop)
	require.Len(t, asked, 1)
	assert.Equal(t, "Always allow `touch "+outside+"/x` with Full access in this project", asked[0].Options[2].Name)
	require.FileExists(t, filepath.Join(home, "state", "dsh-acp", "permissions.json"))

	// Another session of the project: not asked again.
	sid2 := srv.newSession(t, ws).SessionID
	stop, _ = srv.prompt(t, sid2, "touch")
	require.Equal(t, "end_turn", stop)
	assert.Len(t, asked, 1)
	assert.False(t, lastResult(t, root, sid2).IsError, lastResult(t, root, sid2).text())

	// Cleared: asked again.
	stop, lines := srv.prompt(t, sid2, "/clear-permissions")
	require.Equal(t, "end_turn", stop)
	assert.Contains(t, strings.Join(updates(lines, sid2), "\n"), "Cleared 1 permission(s)")
	stop, _ = srv.prompt(t, sid2, "touch")
	require.Equal(t, "end_turn", stop)
	assert.Len(t, asked, 2)
}

// Without a key the editor learns how to set it: an env_var auth method,
// and auth_required (not an internal error at the first prompt) from
// session/new and authenticate; with the key both succeed.
func TestAuthMethodForTheAPIKey(t *testing.T) {
	for _, present := range []bool{false, true} {
		root, ws := t.TempDir(), t.TempDir()
		srv := serveWith(t, "default", openStore(t, root), ws, newProvider(), map[string]any{"auth": map[string]any{}}, nil, func(so *composition.ServerOptions) {
			so.Auth = &acp.EnvAuth{Var: "DEEPSEEK_API_KEY", Present: func() bool { return present }}
		})
		var init struct {
			Result struct {
				AuthMethods []map[string]any `json:"authMethods"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(srv.c.snapshot()[0]), &init))
		require.Len(t, init.Result.AuthMethods, 1)
		m := init.Result.AuthMethods[0]
		assert.Equal(t, "env_var", m["type"])
		assert.Equal(t, "DEEPSEEK_API_KEY", m["varName"])
		assert.Contains(t, m["description"], "DEEPSEEK_API_KEY")

		for _, call := range []struct {
			method string
			params any
		}{{"authenticate", map[string]any{"methodId": m["id"]}}, {"session/new", map[string]any{"cwd": ws, "mcpServers": []any{}}}} {
			_, ch := srv.c.request(call.method, call.params)
			f := srv.c.await(ch, call.method)
			if present {
				assert.Empty(t, string(f.Error), call.method)
				continue
			}
			assert.Contains(t, string(f.Error), `"code":-32000`, call.method)
			assert.Contains(t, string(f.Error), "set DEEPSEEK_API_KEY", call.method)
		}
	}
	// A client that does not handle auth methods still opens sessions (its
	// first prompt says what to set).
	srv := serveWith(t, "default", openStore(t, t.TempDir()), t.TempDir(), newProvider(), map[string]any{}, nil, func(so *composition.ServerOptions) {
		so.Auth = &acp.EnvAuth{Var: "DEEPSEEK_API_KEY", Present: func() bool { return false }}
	})
	srv.newSession(t, t.TempDir())
}

// A model configured to accept images gets them: image is advertised, and
// a pasted image reaches the model's request with the text; a session
// switched to a model without images refuses them with a clear message.
func TestImagesReachAModelThatTakesThem(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	srv := serveWith(t, "default", openStore(t, root), ws, p, map[string]any{}, nil, func(so *composition.ServerOptions) {
		so.Models = []composition.ModelConfig{{ID: defaultModel, Images: true}, {ID: "text-only"}}
	})
	var init struct {
		Result struct {
			AgentCapabilities struct {
				PromptCapabilities struct{ Image bool } `json:"promptCapabilities"`
			} `json:"agentCapabilities"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(srv.c.snapshot()[0]), &init))
	assert.True(t, init.Result.AgentCapabilities.PromptCapabilities.Image)

	sid := srv.newSession(t, ws).SessionID
	image := map[string]any{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
	_, ch := srv.c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "what is this?"}, image}})
	f := srv.c.await(ch, "session/prompt")
	require.Empty(t, string(f.Error))
	reqs := p.requestsFor(sid)
	require.Len(t, reqs, 1)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	require.Len(t, last.Content, 2)
	assert.Equal(t, "what is this?", last.Content[0].Text)
	assert.Equal(t, "image", last.Content[1].Type)
	assert.JSONEq(t, `{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}`, string(last.Content[1].Raw))

	srv.setConfig(t, sid, "model", "text-only")
	_, ch = srv.c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "and this?"}, image}})
	f = srv.c.await(ch, "session/prompt")
	assert.Contains(t, string(f.Error), "does not take image input")
}
