package snapshots

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
)

// In default/editor-fs the scripted client is an editor with an unsaved
// buffer: the model reads the buffer, not the disk; the edit and the
// writes arrive as fs/write_text_file (the buffer's write stays in the
// buffer, the others reach the disk), and a new file is one the editor
// could not read.
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
		{"fs/read_text_file", "CHANGELOG.md", false, acpclient.CodeResourceNotFound},
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
