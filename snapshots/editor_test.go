package snapshots

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In default/editor-fs the scripted client is an editor with an unsaved
// buffer: the model reads the buffer, not the disk; the edit and the
// writes arrive as fs/write_text_file (the buffer's write stays in the
// buffer, the others reach the disk), and a new file, missing on disk,
// costs only its write.
func TestEditorFilesScenario(t *testing.T) {
	sc, err := Load(filepath.Join("testdata", "default", "editor-fs"))
	require.NoError(t, err)
	r := Run(context.Background(), sc, InProcess{Version: "test"}, Options{Timeout: 30 * time.Second})
	require.True(t, r.Passed, "%s\n%s", r.Message, r.Diff)

	type call struct {
		method, file string
		buffer       bool
		code         int
	}
	var got []call
	for _, c := range r.FSCalls {
		k := call{c.Method, filepath.Base(c.Path), c.Buffer, 0}
		if c.Err != nil {
			k.code = c.Err.Code
		}
		got = append(got, k)
	}
	assert.Equal(t, []call{
		{"fs/read_text_file", "notes.md", true, 0},
		{"fs/read_text_file", "app.conf", false, 0},
		{"fs/read_text_file", "app.conf", false, 0},
		{"fs/write_text_file", "app.conf", false, 0},
		{"fs/read_text_file", "notes.md", true, 0},
		{"fs/write_text_file", "notes.md", true, 0},
		{"fs/write_text_file", "CHANGELOG.md", false, 0},
	}, got)
	assert.Equal(t, "name=demo\nmode=release\n", r.FSCalls[3].Content)
	require.Len(t, r.Logs, 1)
	log := string(r.Logs[0])
	assert.Contains(t, log, `2: - ship the release build (unsaved)`, "the model read the unsaved buffer")
}

// A scenario's client advertises what it hosts, and upstream's scenarios
// keep the empty capabilities they were recorded with.
func TestClientCapabilitiesAreAdvertised(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("scenario.json", `{"composition":"default","hasModelTurn":false}`)
	write("input.json", `{"client":{"terminal":true,"buffers":{"a.txt":"x"}},"steps":[{"op":"initialize","terminalOutput":true}]}`)
	write("stdout.golden.jsonl", "")
	write("session.jsonl", `{"type":"session","version":0,"id":"x","createdAt":0,"cwd":"/x"}`+"\n")
	sc, err := Load(dir)
	require.NoError(t, err)
	r := Run(context.Background(), sc, InProcess{Version: "test"}, Options{Timeout: 30 * time.Second})
	require.NotEmpty(t, r.Timeline, r.Message)
	init := string(r.Timeline[0].Line)
	require.True(t, r.Timeline[0].Sent)
	assert.Contains(t, init, `"fs":{"readTextFile":true,"writeTextFile":true}`, "buffers imply fs")
	assert.Contains(t, init, `"terminal":true`)
	assert.Contains(t, init, `"_meta":{"terminal_output":true}`)

	write("input.json", `{"steps":[{"op":"initialize"}]}`)
	sc, err = Load(dir)
	require.NoError(t, err)
	r = Run(context.Background(), sc, InProcess{Version: "test"}, Options{Timeout: 30 * time.Second})
	require.NotEmpty(t, r.Timeline)
	assert.Contains(t, string(r.Timeline[0].Line), `"clientCapabilities":{},`)
	assert.Nil(t, r.FSCalls)
	assert.Nil(t, r.TerminalCalls)
}

// In default/editor-terminal the scripted client is an editor with a
// terminal: both commands really ran there, each terminal served exactly
// create, wait_for_exit, output and release, in that order (the golden
// pins where the agent writes them; this pins what the client did with
// them), and the model got the output and the exit marker.
func TestEditorTerminalScenario(t *testing.T) {
	sc, err := Load(filepath.Join("testdata", "default", "editor-terminal"))
	require.NoError(t, err)
	r := Run(context.Background(), sc, InProcess{Version: "test"}, Options{Timeout: 30 * time.Second})
	require.True(t, r.Passed, "%s\n%s", r.Message, r.Diff)

	var got []string
	for _, c := range r.TerminalCalls {
		require.Nil(t, c.Err, "%s %s", c.Method, c.TerminalID)
		got = append(got, c.TerminalID+" "+c.Method)
	}
	assert.Equal(t, []string{
		"term-1 terminal/create", "term-1 terminal/wait_for_exit", "term-1 terminal/output", "term-1 terminal/release",
		"term-2 terminal/create", "term-2 terminal/wait_for_exit", "term-2 terminal/output", "term-2 terminal/release",
	}, got)
	require.Len(t, r.Terminals, 2)
	for i, want := range []struct {
		output string
		code   int
	}{{"version file:\n1.4.2\n", 0}, {"0\n", 1}} {
		tm := r.Terminals[i]
		<-tm.Done()
		out, cut := tm.Output()
		assert.Equal(t, want.output, out, tm.ID)
		assert.False(t, cut, tm.ID)
		require.NotNil(t, tm.Exit().ExitCode, tm.ID)
		assert.Equal(t, want.code, *tm.Exit().ExitCode, tm.ID)
		assert.False(t, tm.Killed(), "%s ended by itself before its release", tm.ID)
		assert.True(t, tm.Released(), tm.ID)
	}
	require.Len(t, r.Logs, 1)
	assert.Contains(t, string(r.Logs[0]), `"text":"version file:\n1.4.2\n"`, "the output reached the model")
	assert.Contains(t, string(r.Logs[0]), `"text":"0\n[exit code: 1]"`, "and the exit marker")
}

// A scenario whose client has a terminal gets the agent's commands in it:
// the client really runs the confined argv the agent sends (behind
// env -i, so neither the client's environment nor the agent's secrets
// reach the command), the output reaches the model, and every terminal
// is released. (default/editor-terminal records this flow as a golden.)
func TestTerminalScenarioRunsCommandsInTheClientsTerminal(t *testing.T) {
	t.Setenv("DSH_TEST_TOKEN", "sk-not-for-commands")
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("scenario.json", `{"composition":"default","hasModelTurn":true}`)
	write("input.json", `{"client":{"terminal":true},"steps":[{"op":"initialize"},{"op":"newSession"},{"op":"prompt","text":"Run the tests."}]}`)
	write("workspace/test.sh", "printf 'ok 1 - parse\\nok 2 - render\\n'\necho 'warning: slow render' >&2\n")
	write("session.jsonl", `{"type":"session","version":0,"id":"x","createdAt":0,"cwd":"/x"}`+"\n")
	write("replay.override.json", "["+scriptedCall("c1", "bash", `{"command":"sh test.sh","description":"Run the tests"}`)+","+
		scriptedCall("c2", "bash", `{"command":"ls build","description":"List the build directory"}`)+","+scriptedText("Both pass; no build directory.")+"]")
	sc, err := Load(dir)
	require.NoError(t, err)
	r := Run(context.Background(), sc, InProcess{Version: "test"}, Options{Timeout: 30 * time.Second, Update: true})
	require.True(t, r.Passed, r.Message)
	validateTimeline(t, r.Timeline) // terminal/* requests included

	require.Len(t, r.Terminals, 2, "%s", r.Logs)
	for _, tm := range r.Terminals {
		assert.True(t, strings.HasSuffix(tm.Command, "/env"), tm.Command)
		require.NotEmpty(t, tm.Args)
		assert.Equal(t, "-i", tm.Args[0], "the command's environment is exactly the agent's choice")
		assert.NotContains(t, strings.Join(tm.Args, " "), "sk-not-for-commands", "secrets never reach a command")
		assert.True(t, tm.Released(), "%s released", tm.ID)
		<-tm.Done()
	}
	out, _ := r.Terminals[0].Output()
	assert.Equal(t, "ok 1 - parse\nok 2 - render\nwarning: slow render\n", out)
	assert.Equal(t, 0, *r.Terminals[0].Exit().ExitCode)
	assert.Equal(t, 2, *r.Terminals[1].Exit().ExitCode)
	perTerminal := map[string][]string{}
	for _, c := range r.TerminalCalls {
		perTerminal[c.TerminalID] = append(perTerminal[c.TerminalID], c.Method)
	}
	for _, id := range []string{"term-1", "term-2"} {
		assert.Equal(t, []string{"terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"}, perTerminal[id], id)
	}
	require.Len(t, r.Logs, 1)
	assert.Contains(t, string(r.Logs[0]), `ok 2 - render\nwarning: slow render`, "the output reached the model")
	assert.Contains(t, string(r.Logs[0]), `No such file or directory`)
}

// scriptedCall is a replay.override.json entry calling one tool.
func scriptedCall(id, name, args string) string {
	q, _ := json.Marshal(args)
	return `{"kind":"chunks","chunks":[{"type":"block-start","index":0,"blockType":"tool-call"},` +
		`{"type":"tool-call-delta","index":0,"id":"` + id + `","name":"` + name + `","argumentsDelta":` + string(q) + `},` +
		`{"type":"block-end","index":0,"block":{"type":"tool-call","id":"` + id + `","name":"` + name + `","arguments":` + string(q) + `}},` +
		`{"type":"finish","reason":{"kind":"tool-calls"}}]}`
}

// scriptedText is a replay.override.json entry answering text.
func scriptedText(text string) string {
	q, _ := json.Marshal(text)
	return `{"kind":"chunks","chunks":[{"type":"block-start","index":0,"blockType":"text"},` +
		`{"type":"text-delta","index":0,"text":` + string(q) + `},{"type":"block-end","index":0,"block":{"type":"text","text":` + string(q) + `}},` +
		`{"type":"finish","reason":{"kind":"stop"}}]}`
}
