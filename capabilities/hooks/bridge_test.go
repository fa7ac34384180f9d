package hooks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

// turnSession is a session with an open turn 1 in a real log.
func turnSession(t testing.TB) stubSession {
	t.Helper()
	l := session.NewLog(session.Header{ID: "sid", Cwd: t.TempDir()}, func() int64 { return 0 }, nil)
	l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	return stubSession{id: "sid", cwd: l.Header().Cwd, log: l}
}

func bridge(t *testing.T, d Dialect, cfg string, counter *Counter) *Bridge {
	t.Helper()
	c, err := Parse(d, []byte(cfg), ParseOptions{})
	require.NoError(t, err)
	return &Bridge{Config: c, Runner: &Runner{}, Counter: counter, Log: zerolog.Nop()}
}

var duration = regexp.MustCompile(`"durationMs":[0-9.e+-]+`)

// hookEvents returns the hook/* events' data, durations zeroed.
func hookEvents(s stubSession) []string {
	var out []string
	for _, e := range s.log.Events() {
		if strings.HasPrefix(e.Type, "hook/") {
			line, _ := e.MarshalJSON()
			var ev struct {
				Data json.RawMessage `json:"data"`
			}
			_ = json.Unmarshal(line, &ev)
			out = append(out, e.Type+" "+duration.ReplaceAllString(string(ev.Data), `"durationMs":0`))
		}
	}
	return out
}

func TestBridgeLogsEveryMatchedHookWithItsOwnHandlerID(t *testing.T) {
	counter := &Counter{}
	b := bridge(t, Claude, `{"hooks":{"PostToolUse":[
	  {"matcher":"bash","hooks":[{"command":"echo 'first' >&2; exit 2"},{"command":"echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\",\"additionalContext\":\"audited\"}}'"}]},
	  {"matcher":"read","hooks":[{"command":"echo never"}]},
	  {"hooks":[{"command":"exit 2"}]}]}}`, counter)
	s := turnSession(t)
	d, err := b.ReviewResult(context.Background(), s, pipeline.Call{CallID: "c1", Name: "bash", Args: json.RawMessage(`{}`)},
		pipeline.Result{Content: []session.Block{session.TextBlock("HELLO\n")}})
	require.NoError(t, err)
	require.True(t, d.Block)
	require.Equal(t, "first", d.Feedback, "only non-empty reasons are joined")
	require.Equal(t, &pipeline.Context{Source: session.Source{Kind: "plugin", Plugin: "hooks-claude"},
		Content: []session.Block{session.TextBlock("audited")}}, d.Context, "context is kept on a block")
	require.Equal(t, []string{
		`hook/invoked {"turn":1,"point":"PostToolUse","dialect":"claude","handlerId":"claude:PostToolUse:1","matcher":"bash"}`,
		`hook/result {"turn":1,"point":"PostToolUse","handlerId":"claude:PostToolUse:1","decision":"block","exitCode":2,"stderrSummary":"first","durationMs":0}`,
		`hook/invoked {"turn":1,"point":"PostToolUse","dialect":"claude","handlerId":"claude:PostToolUse:2","matcher":"bash"}`,
		`hook/result {"turn":1,"point":"PostToolUse","handlerId":"claude:PostToolUse:2","decision":"pass","exitCode":0,"durationMs":0}`,
		`hook/invoked {"turn":1,"point":"PostToolUse","dialect":"claude","handlerId":"claude:PostToolUse:3"}`,
		`hook/result {"turn":1,"point":"PostToolUse","handlerId":"claude:PostToolUse:3","decision":"block","exitCode":2,"durationMs":0}`,
	}, hookEvents(s))

	// The counter is the process's: another session's bridge goes on.
	b2 := bridge(t, Claude, `{"Stop":[{"hooks":[{"command":"true"}]}]}`, counter)
	s2 := turnSession(t)
	_, err = b2.DecideContinuation(context.Background(), s2, pipeline.StepEnd{Turn: 1, Step: 1})
	require.NoError(t, err)
	require.Contains(t, hookEvents(s2)[0], `"handlerId":"claude:Stop:4"`)
}

func TestExitTwoWithNoStderrUsesThePointsDefaultReason(t *testing.T) {
	ctx := context.Background()
	cfg := `{"UserPromptSubmit":[{"hooks":[{"command":"exit 2"}]}],"PreToolUse":[{"hooks":[{"command":"exit 2"}]}],
	  "PostToolUse":[{"hooks":[{"command":"exit 2"}]}],"Stop":[{"hooks":[{"command":"exit 2"}]}]}`
	b := bridge(t, Codex, cfg, nil)
	s := turnSession(t)
	pd, _ := b.SubmitPrompt(ctx, s, pipeline.Prompt{Turn: 1, Content: []session.Block{session.TextBlock("hi")}})
	require.Equal(t, pipeline.PromptDecision{Block: true, Reason: "blocked by UserPromptSubmit hook"}, pd)
	td, _ := b.CheckTool(ctx, s, pipeline.Call{Name: "bash"})
	require.Equal(t, pipeline.ToolDecision{Verdict: pipeline.ToolDeny, Reason: "blocked by PreToolUse hook"}, td)
	rd, _ := b.ReviewResult(ctx, s, pipeline.Call{Name: "bash"}, pipeline.Result{})
	require.Equal(t, pipeline.ResultDecision{Block: true, Feedback: "blocked by PostToolUse hook"}, rd)
	cd, _ := b.DecideContinuation(ctx, s, pipeline.StepEnd{Turn: 1, Step: 1})
	require.Equal(t, pipeline.ContinueForce, cd.Verdict)
	require.Equal(t, "continue: blocked by Stop hook", cd.Steering.Content[0].Text)
	require.Equal(t, "hooks-codex", cd.Steering.Source.Plugin)

	cd, _ = b.DecideContinuation(ctx, s, pipeline.StepEnd{Turn: 1, Step: 2, Final: true})
	require.Equal(t, pipeline.ContinueDecision{}, cd, "no Stop hook after a failed step")
	require.Len(t, hookEvents(s), 8)
}

func TestAskIsClaudeOnlyAndDenyShortCircuitsLaterBridges(t *testing.T) {
	ctx := context.Background()
	ask := `{"PreToolUse":[{"hooks":[{"command":"echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"manual\"}}'"}]}]}`
	cl := bridge(t, Claude, ask, nil)
	cx := bridge(t, Codex, ask, nil)
	s := turnSession(t)
	d, _ := cl.CheckTool(ctx, s, pipeline.Call{Name: "bash"})
	require.Equal(t, pipeline.ToolDecision{Verdict: pipeline.ToolAsk, Reason: "manual"}, d)
	d, _ = cx.CheckTool(ctx, s, pipeline.Call{Name: "bash"})
	require.Equal(t, pipeline.ToolDecision{}, d, "a Codex ask is ignored")

	deny := bridge(t, Claude, `{"PreToolUse":[{"matcher":"bash","hooks":[{"command":"echo nope >&2; exit 2"}]}]}`, nil)
	later := bridge(t, Codex, `{"PreToolUse":[{"hooks":[{"command":"touch ran"}]}]}`, nil)
	p, err := pipeline.New(zerolog.Nop(), deny, later)
	require.NoError(t, err)
	s2 := turnSession(t)
	got := p.CheckTool(ctx, s2, pipeline.Call{Name: "bash"})
	require.Equal(t, pipeline.ToolDecision{Verdict: pipeline.ToolDeny, Reason: "nope"}, got)
	require.Len(t, hookEvents(s2), 2, "the later bridge logs nothing")
	require.NoFileExists(t, filepath.Join(s2.cwd, "ran"))
}

func TestClaudeHooksRunInTheSessionCwdWithTheProjectDir(t *testing.T) {
	b := bridge(t, Claude, `{"UserPromptSubmit":[{"hooks":[{"command":"cat > payload.json; echo \"$CLAUDE_PROJECT_DIR|${CLAUDE_PROJECT_DIR}\" > dir.txt"}]}]}`, nil)
	s := turnSession(t)
	_, err := b.SubmitPrompt(context.Background(), s, pipeline.Prompt{Turn: 1, Content: []session.Block{session.TextBlock("a"), session.TextBlock("b")}})
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(s.cwd, "payload.json"))
	require.NoError(t, err)
	require.Equal(t, `{"session_id":"sid","cwd":"`+s.cwd+`","hook_event_name":"UserPromptSubmit","prompt":"ab"}`+"\n", string(raw))
	dir, err := os.ReadFile(filepath.Join(s.cwd, "dir.txt"))
	require.NoError(t, err)
	require.Equal(t, s.cwd+"|"+s.cwd+"\n", string(dir))

	cx := bridge(t, Codex, `{"UserPromptSubmit":[{"hooks":[{"command":"cat > payload.json"}]}]}`, nil)
	_, err = cx.SubmitPrompt(context.Background(), s, pipeline.Prompt{Turn: 1})
	require.NoError(t, err)
	raw, _ = os.ReadFile(filepath.Join(s.cwd, "payload.json"))
	require.False(t, strings.HasSuffix(string(raw), "\n"), "Codex stdin has no trailing newline")
}

func TestSessionStartIsDetachedAndNotLogged(t *testing.T) {
	b := bridge(t, Codex, `{"SessionStart":[{"matcher":"startup","hooks":[{"command":"echo 'remember the milk'"}]}]}`, nil)
	s := turnSession(t)
	c, err := b.StartSession(context.Background(), s, "startup")
	require.NoError(t, err)
	require.Equal(t, "remember the milk", c.Content[0].Text)
	require.Empty(t, hookEvents(s))
	c, _ = b.StartSession(context.Background(), s, "resume")
	require.Nil(t, c, "the matcher selects the source")
}
