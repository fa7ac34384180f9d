package bash

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/stretchr/testify/require"
)

func TestBackgroundTaskLifecycle(t *testing.T) {
	settled := make(chan TaskInfo, 4)
	f := newFixture(t, func(o *Options) { o.Tasks = NewTasks(func(i TaskInfo) { settled <- i }) })
	ctx := context.Background()
	gate := filepath.Join(f.env.cwd, "go")

	o := f.call(ctx, f.env, "bash", map[string]any{
		"command":           "echo one; while [ ! -f go ]; do sleep 0.02; done; echo two >&2",
		"description":       "gated",
		"run_in_background": true,
	})
	require.Equal(t, "started background task bash-1", text(t, o))

	require.Eventually(t, func() bool {
		return text(t, f.call(ctx, f.env, "task_output", map[string]any{"task_id": "bash-1"})) == "one\n\n[status: running]"
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, "(no new output)\n[status: running]", text(t, f.call(ctx, f.env, "task_output", map[string]any{"task_id": "bash-1"})))

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	var info TaskInfo
	select {
	case info = <-settled:
	case <-time.After(5 * time.Second):
		t.Fatal("task did not settle")
	}
	require.Equal(t, "bash-1", info.ID)
	require.Equal(t, "session-a", info.Owner)
	require.Equal(t, "background task bash-1 (bash: echo one; while [ ! -f go ]; do sleep 0.02; done; echo two >&2) finished completed. Read its output with task_output.", Notice(info))

	require.Equal(t, "[stderr]\ntwo\n\n[status: completed, exit code: 0]", text(t, f.call(ctx, f.env, "task_output", map[string]any{"task_id": "bash-1"})))
	require.Equal(t, "(no new output)\n[status: completed, exit code: 0]", text(t, f.call(ctx, f.env, "task_output", map[string]any{"task_id": "bash-1"})))

	// Kill a running task.
	o = f.call(ctx, f.env, "bash", map[string]any{"command": "sleep 100", "description": "d", "run_in_background": true})
	require.Equal(t, "started background task bash-2", text(t, o))
	o = f.call(ctx, f.env, "task_kill", map[string]any{"task_id": "bash-2"})
	require.False(t, o.IsError)
	require.Equal(t, "killed background task bash-2", text(t, o))
	require.Equal(t, "(no new output)\n[status: killed by SIGTERM]", text(t, f.call(ctx, f.env, "task_output", map[string]any{"task_id": "bash-2"})))
	require.Equal(t, "task bash-2 had already finished", text(t, f.call(ctx, f.env, "task_kill", map[string]any{"task_id": "bash-2"})))
	require.Equal(t, StateKilled, (<-settled).Status.State)

	// A task that exits non-zero by itself.
	f.call(ctx, f.env, "bash", map[string]any{"command": "exit 4", "description": "d", "run_in_background": true})
	<-settled

	require.Equal(t, "bash-1 (bash: echo one; while [ ! -f go ]; do sleep 0.02; done; echo two >&2) [status: completed, exit code: 0]\n"+
		"bash-2 (bash: sleep 100) [status: killed by SIGTERM]\n"+
		"bash-3 (bash: exit 4) [status: completed, exit code: 4]",
		text(t, f.call(ctx, f.env, "task_list", map[string]any{})))
}

func TestTaskOwnershipAndErrors(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	other := newEnv(t, "session-b")
	f.call(ctx, f.env, "bash", map[string]any{"command": "sleep 100", "description": "d", "run_in_background": true})

	for _, tool := range []string{"task_output", "task_kill"} {
		o := f.call(ctx, other, tool, map[string]any{"task_id": "bash-1"})
		require.True(t, o.IsError)
		require.Equal(t, "Error: task bash-1 belongs to another session", text(t, o))
		o = f.call(ctx, f.env, tool, map[string]any{"task_id": "bash-9"})
		require.Equal(t, `Error: unknown task "bash-9"`, text(t, o))
		o = f.call(ctx, f.env, tool, map[string]any{"task_id": ""})
		require.Equal(t, `Error: invalid task_id: expected a string, got ""`, text(t, o))
		o = f.call(ctx, f.env, tool, map[string]any{})
		require.Equal(t, `Error: invalid arguments: missing required property "task_id"`, text(t, o))
	}
	require.Equal(t, "(no background tasks)", text(t, f.call(ctx, other, "task_list", map[string]any{})))
	require.Equal(t, "bash-1 (bash: sleep 100) [status: running]", text(t, f.call(ctx, f.env, "task_list", map[string]any{})))

	// Ids count per registry, across sessions.
	o := f.call(ctx, other, "bash", map[string]any{"command": "true", "description": "d", "run_in_background": true})
	require.Equal(t, "started background task bash-2", text(t, o))

	f.tasks.KillOwner(ctx, "session-a")
	require.Equal(t, "bash-1 (bash: sleep 100) [status: killed by SIGTERM]", text(t, f.call(ctx, f.env, "task_list", map[string]any{})))
}

func TestBackgroundDroppedOutput(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	f.call(ctx, f.env, "bash", map[string]any{"command": "seq 1 60000", "description": "d", "run_in_background": true})
	f.awaitSettled(t, "bash-1")
	out := text(t, f.call(ctx, f.env, "task_output", map[string]any{"task_id": "bash-1"}))
	i := strings.Index(out, "\n[some output was dropped from memory; full output: ")
	require.Positive(t, i, out[max(0, len(out)-300):])
	path := strings.TrimSuffix(out[i+len("\n[some output was dropped from memory; full output: "):], "]\n[status: completed, exit code: 0]")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), "1\n2\n3\n"))
	require.True(t, strings.HasSuffix(string(b), "59999\n60000\n"))
	require.True(t, strings.HasSuffix(out[:i], "60000\n"))
}

func TestBackgroundSpawnFailure(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	o := f.call(ctx, f.env, "bash", map[string]any{"command": "true", "description": "d", "run_in_background": true, "workdir": "missing"})
	require.Equal(t, "started background task bash-1", text(t, o))
	out := text(t, f.call(ctx, f.env, "task_output", map[string]any{"task_id": "bash-1"}))
	require.True(t, strings.HasPrefix(out, "[stderr]\nspawn failed: "), out)
	require.True(t, strings.HasSuffix(out, "\n[status: failed]"), out)
	require.Equal(t, "task bash-1 had already finished", text(t, f.call(ctx, f.env, "task_kill", map[string]any{"task_id": "bash-1"})))
}

func TestBackgroundOutlivesCallContext(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	o := f.call(ctx, f.env, "bash", map[string]any{"command": "sleep 0.2; echo late", "description": "d", "run_in_background": true})
	require.Equal(t, "started background task bash-1", text(t, o))
	cancel()
	f.awaitSettled(t, "bash-1")
	require.Equal(t, "late\n\n[status: completed, exit code: 0]", text(t, f.call(context.Background(), f.env, "task_output", map[string]any{"task_id": "bash-1"})))
}

// awaitSettled waits until the session's task id is no longer running,
// without reading its output.
func (f *fixture) awaitSettled(t *testing.T, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, in := range f.tasks.List(f.env.log.ID()) {
			if in.ID == id {
				return in.Status.State != StateRunning
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
}

func TestTaskLabel(t *testing.T) {
	require.Equal(t, "a b c", taskLabel("a\n  b\tc "))
	long := strings.Repeat("x", 100)
	require.Equal(t, strings.Repeat("x", 79)+"…", taskLabel(long))
}

// TestCloseKillsBackgroundTasks: closing the bash tool (its session went
// away) kills the background tasks it started.
func TestCloseKillsBackgroundTasks(t *testing.T) {
	tasks := NewTasks(nil)
	tools := New(Options{Tasks: tasks, KillGrace: 300 * time.Millisecond})
	reg := capabilities.NewRegistry(tools...)
	out := reg.Execute(context.Background(), nil, "c1", "bash", `{"command":"sleep 300","description":"sleep","run_in_background":true}`)
	require.False(t, out.IsError, "%v", out.Content)
	list := tasks.List("")
	require.Len(t, list, 1)
	require.NoError(t, reg.Close(context.Background()))
	for _, info := range tasks.List("") {
		require.NotEqual(t, StateRunning, info.Status.State, "%+v", info)
	}
}
