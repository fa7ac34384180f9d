package bash

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// testEnv is a session environment with a cwd and a log id.
type testEnv struct {
	cwd string
	log *session.Log
}

func (e testEnv) Cwd() string       { return e.cwd }
func (e testEnv) Log() *session.Log { return e.log }

func (e testEnv) Host() *capabilities.Host { return nil }

func newEnv(t *testing.T, id string) testEnv {
	t.Helper()
	dir := t.TempDir()
	return testEnv{cwd: dir, log: session.NewLog(session.Header{ID: id, Cwd: dir}, func() int64 { return 0 }, nil)}
}

// fixture is a registry of the family with short process timings.
type fixture struct {
	reg   *capabilities.Registry
	tasks *Tasks
	env   testEnv
	spill string
}

func newFixture(t *testing.T, mod func(*Options)) *fixture {
	t.Helper()
	f := &fixture{env: newEnv(t, "session-a"), spill: t.TempDir()}
	opts := Options{SpillDir: f.spill, KillGrace: 300 * time.Millisecond, Tasks: NewTasks(nil)}
	if mod != nil {
		mod(&opts)
	}
	f.tasks = opts.Tasks
	f.reg = capabilities.NewRegistry(New(opts)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f.tasks.Close(ctx)
	})
	return f
}

// call runs a tool call through the registry pipeline with JSON args.
func (f *fixture) call(ctx context.Context, env capabilities.Env, name string, args any) capabilities.Outcome {
	return f.reg.Execute(ctx, env, "call-1", name, string(jsonx.MustMarshal(args)))
}

// text is an outcome's single text block.
func text(t *testing.T, o capabilities.Outcome) string {
	t.Helper()
	require.Len(t, o.Content, 1)
	require.Equal(t, session.BlockText, o.Content[0].Type)
	return o.Content[0].Text
}

// bashOK runs command in the foreground and returns its result text.
func (f *fixture) bashOK(t *testing.T, command string, extra map[string]any) string {
	t.Helper()
	args := map[string]any{"command": command, "description": "test command"}
	for k, v := range extra {
		args[k] = v
	}
	o := f.call(context.Background(), f.env, "bash", args)
	require.False(t, o.IsError, "unexpected error: %+v", o.Content)
	return text(t, o)
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// state is the field after the parenthesized command name
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// readPids waits until path holds n pid lines and returns them.
func readPids(t *testing.T, path string, n int) []int {
	t.Helper()
	var pids []int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pids = pids[:0]
		for _, l := range strings.Fields(string(b)) {
			p, err := strconv.Atoi(l)
			if err == nil {
				pids = append(pids, p)
			}
		}
		return len(pids) >= n
	}, 10*time.Second, 10*time.Millisecond)
	return pids
}
