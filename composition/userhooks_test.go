package composition

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

// fakeAnswerer answers every approval with outcome and counts the asks.
type fakeAnswerer struct {
	mu      sync.Mutex
	outcome approval.Outcome
	asked   []approval.Request
}

func (f *fakeAnswerer) Answer(_ context.Context, _ string, req approval.Request) (approval.Outcome, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, req)
	return f.outcome, true, nil
}

func (f *fakeAnswerer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

// hookEnv is a user home, a state dir and a project on disk.
type hookEnv struct {
	home, project string
	getenv        func(string) string
}

func newHookEnv(t *testing.T) hookEnv {
	t.Helper()
	home, project := t.TempDir(), t.TempDir()
	return hookEnv{home: home, project: project, getenv: func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// hookSettings is a settings file whose UserPromptSubmit hook appends
// mark to ran.txt in the session directory.
func hookSettings(mark string) string {
	return `{"model":"x","hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo ` + mark + ` >> ran.txt"}]}]}}`
}

type logSession struct {
	id, cwd string
	log     *session.Log
}

func (s logSession) ID() string        { return s.id }
func (s logSession) Cwd() string       { return s.cwd }
func (s logSession) Log() *session.Log { return s.log }

func (s logSession) Host() *capabilities.Host { return nil }

// factory is the default composition's member factory over env, with an
// approval service answered by ans; stderr collects warnings.
func (e hookEnv) factory(t *testing.T, ans *fakeAnswerer, stderr *bytes.Buffer) memberFactory {
	t.Helper()
	c, _ := Builtin("default")
	c.Sandbox = "" // these tests are about loading and consent; confinement is tested in hooks
	svc := approval.NewService("ask", func() string { return "id" }, ans)
	log := zerolog.Nop()
	if stderr != nil {
		log = zerolog.New(stderr)
	}
	f := c.members(ServerOptions{Getenv: e.getenv, Log: log}, svc, nil)
	require.NotNil(t, f)
	return f
}

// prompt opens a turn in a fresh log and runs the prompt-submit chain of
// a session built by f.
func prompt(t *testing.T, f memberFactory, cwd string) (pipeline.PromptDecision, logSession) {
	t.Helper()
	l := session.NewLog(session.Header{ID: "s", Cwd: cwd}, func() int64 { return 0 }, nil)
	s := logSession{id: "s", cwd: cwd, log: l}
	p, err := pipeline.New(zerolog.Nop(), f(s)...)
	require.NoError(t, err)
	l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	d := p.SubmitPrompt(context.Background(), s, pipeline.Prompt{Turn: 1, Content: []session.Block{session.TextBlock("hi")}})
	return d, s
}

func ran(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "ran.txt"))
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

func types(l *session.Log) []string {
	var out []string
	for _, e := range l.Events() {
		out = append(out, e.Type)
	}
	return out
}

func TestUserHooksRunWithoutAsking(t *testing.T) {
	e := newHookEnv(t)
	writeFile(t, filepath.Join(e.home, ".claude", "settings.json"), hookSettings("claude-user"))
	writeFile(t, filepath.Join(e.home, ".codex", "hooks.json"), `{"hooks":{"UserPromptSubmit":[{"hooks":[{"command":"echo codex-user >> ran.txt"}]}]}}`)
	ans := &fakeAnswerer{outcome: approval.Rejected}
	prompt(t, e.factory(t, ans, nil), e.project)
	require.Equal(t, "claude-user\ncodex-user\n", ran(t, e.project), "Claude's bridge first, then Codex's")
	require.Zero(t, ans.count())
}

func TestProjectHooksAskOnceAndAlwaysIsRememberedUntilTheyChange(t *testing.T) {
	e := newHookEnv(t)
	settings := filepath.Join(e.project, ".claude", "settings.json")
	writeFile(t, settings, hookSettings("project"))
	ans := &fakeAnswerer{outcome: approval.AllowedAlways}
	f := e.factory(t, ans, nil)

	_, s := prompt(t, f, e.project)
	require.Equal(t, "project\n", ran(t, e.project))
	require.Equal(t, 1, ans.count())
	require.Equal(t, "hooks", ans.asked[0].ToolName)
	require.Contains(t, ans.asked[0].Reason, "claude UserPromptSubmit: echo project >> ran.txt")
	require.Equal(t, []string{session.TypeTurnStart, agent.TypeCommandResult, session.TypeApprovalAsked, session.TypeApprovalDecided,
		"hook/invoked", "hook/result"}, types(s.log), "the commands are shown, then asked about, then run")

	state, err := os.ReadFile(filepath.Join(e.home, ".local", "state", "dsh-acp", "hook-consent.json"))
	require.NoError(t, err)
	var stored consentFile
	require.NoError(t, json.Unmarshal(state, &stored))
	require.Len(t, stored.Projects[e.project], 64, "the project maps to the hash of its hook set")

	// A later session (even of a new server) does not ask again.
	_, s2 := prompt(t, e.factory(t, ans, nil), e.project)
	require.Equal(t, 1, ans.count())
	require.Equal(t, []string{session.TypeTurnStart, "hook/invoked", "hook/result"}, types(s2.log))

	// A changed hook set asks again.
	writeFile(t, settings, hookSettings("changed"))
	prompt(t, f, e.project)
	require.Equal(t, 2, ans.count())
	require.Equal(t, "project\nproject\nchanged\n", ran(t, e.project))
}

func TestRejectedProjectHooksDoNotRunAndAreNotAskedAgain(t *testing.T) {
	e := newHookEnv(t)
	writeFile(t, filepath.Join(e.project, ".codex", "hooks.json"), `{"hooks":{"UserPromptSubmit":[{"hooks":[{"command":"echo no >> ran.txt"}]}],
	  "Stop":[{"hooks":[{"command":"echo stop >> ran.txt"}]}]}}`)
	writeFile(t, filepath.Join(e.home, ".claude", "settings.json"), hookSettings("user"))
	ans := &fakeAnswerer{outcome: approval.Rejected}
	f := e.factory(t, ans, nil)
	l := session.NewLog(session.Header{ID: "s", Cwd: e.project}, func() int64 { return 0 }, nil)
	s := logSession{id: "s", cwd: e.project, log: l}
	p, err := pipeline.New(zerolog.Nop(), f(s)...)
	require.NoError(t, err)
	l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	p.SubmitPrompt(context.Background(), s, pipeline.Prompt{Turn: 1})
	p.DecideContinuation(context.Background(), s, pipeline.StepEnd{Turn: 1, Step: 1})
	require.Equal(t, "user\n", ran(t, e.project), "the user's hook runs; the project's do not")
	require.Equal(t, 1, ans.count(), "one answer covers the session")
}

func TestProjectHooksAreOrderedByPrecedenceAndDeduplicated(t *testing.T) {
	e := newHookEnv(t)
	writeFile(t, filepath.Join(e.home, ".claude", "settings.json"), hookSettings("user"))
	writeFile(t, filepath.Join(e.project, ".claude", "settings.json"), hookSettings("shared"))
	writeFile(t, filepath.Join(e.project, ".claude", "settings.local.json"),
		`{"hooks":{"UserPromptSubmit":[{"hooks":[{"command":"echo local >> ran.txt"},{"command":"echo shared >> ran.txt"}]}]}}`)
	ans := &fakeAnswerer{outcome: approval.AllowedOnce}
	prompt(t, e.factory(t, ans, nil), e.project)
	require.Equal(t, "local\nshared\nuser\n", ran(t, e.project))
}

func TestAnInvalidConfigIsRejectedWholeWithOneWarningAndANotice(t *testing.T) {
	e := newHookEnv(t)
	writeFile(t, filepath.Join(e.home, ".claude", "settings.json"),
		`{"hooks":{"UserPromptSubmit":[{"hooks":[{"command":"echo good >> ran.txt"}]}],"PreToolUse":[{"matcher":"(bash","hooks":[{"command":"true"}]}]}}`)
	writeFile(t, filepath.Join(e.home, ".codex", "hooks.json"), `{"hooks": {`)
	var stderr bytes.Buffer
	ans := &fakeAnswerer{}
	f := e.factory(t, ans, &stderr)
	warnings := strings.Count(stderr.String(), "hook config rejected")
	require.Equal(t, 2, warnings, "one warning per rejected file: %s", stderr.String())

	d, s := prompt(t, f, e.project)
	require.False(t, d.Block)
	require.Empty(t, ran(t, e.project), "never half a config: the valid hook of the rejected file does not run")
	var notices []string
	for _, ev := range s.log.Events() {
		if ev.Type == agent.TypeCommandResult {
			var r agent.CommandResult
			require.NoError(t, ev.Decode(&r))
			notices = append(notices, r.Text)
		}
	}
	require.Len(t, notices, 1)
	require.Contains(t, notices[0], `matcher "(bash" on PreToolUse: invalid regular expression`)
	require.Contains(t, notices[0], filepath.Join(e.home, ".codex", "hooks.json"))
}
