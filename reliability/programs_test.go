package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/netsink"
)

// deep is a 20k-deep array literal, 20 times the depth bound. (The
// 300k-deep literal that overflowed the agent's stack is in the code and
// workflow tests; here every frame that carries the program is checked
// against the ACP schema, which a 600 KB argument makes slow under -race.
// The eval programs below build the 300k-deep literal at run time.)
var deep = strings.Repeat("[", 20000) + strings.Repeat("]", 20000)

// workflowCall is a workflow tool call running script.
func workflowCall(script string) toolCall {
	b, _ := json.Marshal(map[string]any{"meta": map[string]string{"name": "probe", "description": "a hostile program"}, "script": script})
	return toolCall{"workflow", string(b)}
}

// codeCall is a run_code tool call running program.
func codeCall(program string) toolCall {
	b, _ := json.Marshal(map[string]string{"code": program})
	return toolCall{"run_code", string(b)}
}

// programCalls are the programs the "prog" script runs, by prompt id.
var programCalls = map[string]toolCall{
	// The four crash programs: a stack overflow of the parser or of eval
	// at run time, in both tools.
	"wf-eval":   workflowCall(`eval('['.repeat(3e5) + ']'.repeat(3e5)); return 1`),
	"wf-deep":   workflowCall("return " + deep),
	"code-deep": codeCall("return " + deep),
	"code-eval": codeCall(`return eval('['.repeat(3e5) + ']'.repeat(3e5)).length`),
	// The two memory bombs: a 1 GiB string.
	"wf-bomb":   workflowCall(`const s = 'x'.repeat(2 ** 30); return s.length`),
	"code-bomb": codeCall(`const s = 'x'.repeat(2 ** 30); return s.length`),
	// The spin after the first await.
	"wf-spin": workflowCall(`await agent("say hello"); for (;;) {}`),
	// A program that still works: the next program gets a fresh worker.
	"code-ok": codeCall(`return 6 * 7`),
}

// extraCalls are programs a test adds while model servers run.
var extraCalls sync.Map // id → toolCall

// programCall returns the program of id.
func programCall(id string) (toolCall, bool) {
	if c, ok := programCalls[id]; ok {
		return c, true
	}
	c, ok := extraCalls.Load(id)
	if !ok {
		return toolCall{}, false
	}
	return c.(toolCall), true
}

// setToolMode switches a session's tool mode (run_code is offered in
// "both").
func (a *agentProc) setToolMode(sid, mode string) {
	a.t.Helper()
	_, err := a.call(context.Background(), "session/set_config_option", "", map[string]any{"sessionId": sid, "configId": "tool-mode", "value": mode})
	require.NoError(a.t, err)
}

// programResult runs the program of id in session sid and returns the
// tool result the model saw.
func programResult(a *agentProc, m *model, sid, id string) (string, error) {
	_, ch, err := a.prompt(sid, "run it "+marker("prog", id))
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	stop, err := a.stopReason(ctx, ch)
	if err != nil {
		return "", fmt.Errorf("prompt %s: %w%s", id, err, a.stderr.hint())
	}
	if stop != "end_turn" {
		return "", fmt.Errorf("prompt %s stopped %s", id, stop)
	}
	for _, r := range m.Requests() {
		if r.Prompt == id && r.Step == 1 && len(r.Results) == 1 {
			return r.Results[0], nil
		}
	}
	return "", fmt.Errorf("%s: the model never saw the tool result", id)
}

// TestHostileProgramsCostOneToolResult runs the four crash programs, the
// two memory bombs and the spin after an await through the real wire:
// each ends as a failed tool result that names what happened, the agent
// survives with its peak memory barely moved, and a second session of
// the same process answers while each runs.
func TestHostileProgramsCostOneToolResult(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the agent's VmHWM from /proc")
	}
	m := newModel(t, 0)
	root := t.TempDir()
	cwd := t.TempDir()
	a := startAgent(t, agentConfig{root: filepath.Join(root, "sessions"), store: "jsonl", model: m, dir: cwd})
	hostile := a.newSession(cwd)
	a.setToolMode(hostile, "both")
	other := a.newSession(cwd)
	_, before, err := a.memory()
	require.NoError(t, err)
	for _, c := range []struct{ id, want string }{
		{"wf-eval", "workflow run failed: the program's worker crashed: stack overflow"},
		{"wf-deep", "workflow script does not parse: SyntaxError: the program nests brackets more than 1000 levels deep"},
		{"code-deep", "code run failed (exception): SyntaxError: the program nests brackets more than 1000 levels deep"},
		{"code-eval", "code run failed (crash): the program's worker crashed: stack overflow"},
		{"wf-bomb", "workflow run failed: the program used more memory than its cap (256 MiB) allows"},
		{"code-bomb", "code run failed (memory): the program used more memory than its cap (256 MiB) allows"},
		{"wf-spin", "workflow run failed: the script computed for more than 5000 ms after an await without yielding"},
		{"code-ok", "42"},
	} {
		t.Run(c.id, func(t *testing.T) {
			var wg sync.WaitGroup
			var text string
			var runErr error
			var hostileDone time.Time
			wg.Add(1)
			go func() {
				defer wg.Done()
				text, runErr = programResult(a, m, hostile, c.id)
				hostileDone = time.Now()
			}()
			// Meanwhile, another session of the same agent answers.
			_, ch, err := a.prompt(other, "hello "+marker("text", "other-"+c.id))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			stop, err := a.stopReason(ctx, ch)
			cancel()
			otherDone := time.Now()
			require.NoError(t, err)
			assert.Equal(t, "end_turn", stop)
			wg.Wait()
			require.NoError(t, runErr)
			if strings.Contains(c.want, "stack overflow") && strings.Contains(text, "without yielding and did not stop; its worker was killed") {
				// The compute watchdog won the race on a loaded machine
				// (the parser inside eval does not see goja's interrupt).
				return
			}
			assert.Contains(t, text, c.want)
			if c.id == "wf-spin" {
				assert.True(t, otherDone.Before(hostileDone), "the other session answered while the program spun")
			}
		})
	}
	_, after, err := a.memory()
	require.NoError(t, err)
	t.Logf("the agent's VmHWM: %d → %d kB", before, after)
	assert.Less(t, after-before, int64(64<<10), "the agent's VmHWM grew by %d kB", after-before)
	require.NoError(t, a.close(), "the agent survived every program and exits cleanly")
}

// TestEscapedProgramCannotWriteOrConnect simulates a program that escaped
// the JavaScript engine (the worker's test-only hook runs Go in the
// worker): it can neither write a file, in the workspace or in /tmp, nor
// connect to a listener on loopback, nor read the agent's API key.
func TestEscapedProgramCannotWriteOrConnect(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the worker's confinement is checked on Linux here")
	}
	sink := netsink.New(t, nil)
	m := newModel(t, 0)
	root := t.TempDir()
	cwd := t.TempDir()
	inWorkspace := filepath.Join(cwd, "escaped.txt")
	inTmp := filepath.Join(os.TempDir(), fmt.Sprintf("dsh-escaped-%d", time.Now().UnixNano()))
	extraCalls.Store("escape-write-ws", codeCall("//escape:write "+inWorkspace))
	extraCalls.Store("escape-write-tmp", codeCall("//escape:write "+inTmp))
	extraCalls.Store("escape-connect", codeCall("//escape:connect "+sink.Addr()))
	extraCalls.Store("escape-env", codeCall("//escape:env DEEPSEEK_API_KEY"))
	a := startAgent(t, agentConfig{root: filepath.Join(root, "sessions"), store: "jsonl", model: m, dir: cwd})
	sid := a.newSession(cwd)
	a.setToolMode(sid, "both")
	env, err := programResult(a, m, sid, "escape-env")
	require.NoError(t, err)
	names, ok := strings.CutPrefix(env, "escape env DEEPSEEK_API_KEY= (variables: ")
	require.True(t, ok, "the key's value is empty in the worker: %s", env)
	for _, leaked := range []string{"DEEPSEEK", "HOME", "PATH", "XDG_"} {
		assert.NotContains(t, names, leaked, "the agent's environment stays out of the worker")
	}
	for _, id := range []string{"escape-write-ws", "escape-write-tmp", "escape-connect"} {
		text, err := programResult(a, m, sid, id)
		require.NoError(t, err)
		t.Logf("%s: %s", id, text)
		assert.Contains(t, text, "failed", "%s: %s", id, text)
		assert.NotContains(t, text, "succeeded", id)
	}
	assert.NoFileExists(t, inWorkspace)
	assert.NoFileExists(t, inTmp)
	assert.Zero(t, sink.Conns.Load(), "the escaped program connected to the loopback listener")
}
