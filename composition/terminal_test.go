package composition_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// terminalMethods are the terminal/* methods the editor served, in order.
func terminalMethods(terms *acpclient.Terminals) []string {
	var out []string
	for _, c := range terms.Calls() {
		out = append(out, c.Method)
	}
	return out
}

// awaitReleased waits (bounded) until the editor released every terminal
// (a finished one is released after its result is logged, so possibly
// after the prompt's answer).
func awaitReleased(t *testing.T, terms *acpclient.Terminals) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, tm := range terms.Created() {
			if !tm.Released() {
				return false
			}
		}
		return len(terms.Created()) > 0
	}, waitFor, 5*time.Millisecond)
}

// The default composition runs a bash command in the editor's terminal,
// confined: the editor is handed the sandbox runner behind env -i, the
// card embeds the terminal, the model gets the output with the usual
// markers, and a later session/load shows the recorded result.
func TestDefaultRunsCommandsInTheEditorsTerminal(t *testing.T) {
	project := t.TempDir()
	outside, err := os.MkdirTemp("/var/tmp", "dsh-terminal-outside-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(outside) })
	store := t.TempDir()
	p := newProvider()
	terms := &acpclient.Terminals{Env: append(os.Environ(), "EDITOR_SECRET_TOKEN=editor")}
	s := serveClient(t, "default", openStore(t, store), project, p, acpclient.Options{Terminals: terms}, nil)
	sid := s.newSession(t, project).SessionID

	command := `echo "hi [$EDITOR_SECRET_TOKEN]"; echo in > made; echo out > ` + filepath.Join(outside, "escaped")
	args, _ := json.Marshal(map[string]string{"command": command, "description": "say hi"})
	p.script("run it", toolCall{Name: "bash", Args: string(args)})
	_, lines := s.prompt(t, sid, "run it")
	awaitReleased(t, terms)

	require.Equal(t, []string{"terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"}, terminalMethods(terms))
	tm := terms.Created()[0]
	require.Equal(t, "env", filepath.Base(tm.Command))
	require.Equal(t, "-i", tm.Args[0])
	i := slices.IndexFunc(tm.Args[1:], func(a string) bool { return !strings.Contains(a, "=") }) + 1
	runner := tm.Args[i]
	require.True(t, filepath.IsAbs(runner), runner)
	require.True(t, filepath.Base(runner) == "bwrap" || tm.Args[i+1] == sandbox.HelperArg, "the editor runs the sandbox runner: %q", tm.Args)
	require.Equal(t, project, tm.Cwd)

	require.FileExists(t, filepath.Join(project, "made"))
	require.NoFileExists(t, filepath.Join(outside, "escaped"))
	res := lastResult(t, store, sid).text()
	require.True(t, strings.HasPrefix(res, "hi []\n"), res)
	require.Contains(t, res, "[sandbox: file access denied under workspace-write mode]")

	// The card showed the editor's terminal while it ran and keeps it.
	var withTerminal int
	for _, u := range updates(lines, sid) {
		if strings.Contains(u, `"sessionUpdate":"tool_call_update"`) && strings.Contains(u, `{"type":"terminal","terminalId":"`+tm.ID+`"}`) {
			withTerminal++
		}
	}
	require.Equal(t, 2, withTerminal, "the running card and the result card embed the terminal: %v", updates(lines, sid))

	// A load shows the recorded output (the terminal is gone).
	s.c.call("session/close", map[string]any{"sessionId": sid})
	mark := s.c.mark()
	s.loadSession(t, sid, project)
	var loaded string
	for _, u := range updates(s.c.since(mark), sid) {
		if strings.Contains(u, `"sessionUpdate":"tool_call_update"`) {
			loaded = u
		}
	}
	require.Contains(t, loaded, "```console\\nhi []\\n")
	require.NotContains(t, loaded, `"type":"terminal"`)
}

// An upstream composition keeps running commands itself, whatever the
// client hosts.
func TestUpstreamIgnoresTheEditorsTerminal(t *testing.T) {
	project := t.TempDir()
	store := t.TempDir()
	p := newProvider()
	terms := &acpclient.Terminals{}
	s := serveClient(t, "sandbox-acp-agent", openStore(t, store), project, p, acpclient.Options{Terminals: terms}, nil)
	sid := s.newSession(t, project).SessionID
	args, _ := json.Marshal(map[string]string{"command": "echo local", "description": "d"})
	p.script("run it", toolCall{Name: "bash", Args: string(args)})
	s.prompt(t, sid, "run it")
	require.Empty(t, terms.Calls())
	require.Equal(t, "local\n", lastResult(t, store, sid).text())
}
