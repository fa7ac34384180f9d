//go:build linux

package bash

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// A confined command killed at any moment of its start is gone when the
// kill returns. bwrap's pid-namespace init leaves its launcher's process
// group and session (--new-session) and only arms its parent-death signal
// once its own setup is done: a task killed in that window used to lose
// only the launcher, while the init and the command ran on, orphaned,
// until they ended by themselves (composition's session/close test caught
// it under load); and later the namespace died after the kill had
// returned. The kills are spread over the first tens of milliseconds so
// that some of them land in the window.
func TestConfinedTaskKilledWhileStartingLeavesNothing(t *testing.T) {
	b := &sandbox.Bwrap{}
	requireUsable(t, b)
	l := newEscapeLab(t, b, "workspace-write", "unused")
	s := l.session()
	for i := range 25 {
		delay := time.Duration(i*2) * time.Millisecond
		marker := "killwindow-" + l.id + "-" + strconv.Itoa(i)
		out := s.bash(t, "exec -a "+marker+" sleep 300", true)
		id := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(out, "\n", 2)[0], "started background task "))
		time.Sleep(delay)
		o := s.reg.Execute(context.Background(), s.env, "kill", "task_kill", string(jsonx.MustMarshal(map[string]any{"task_id": id})))
		require.Len(t, o.Content, 1)
		require.False(t, o.IsError, "%s: %s", id, o.Content[0].Text)
		// A process of the command's sandbox names the marker in its argv
		// from its fork on (the launcher's argv holds the command line),
		// and none is left once the kill has returned.
		left := withArg(marker)
		assert.Empty(t, left, "killed %v after its start, %s left these running", delay, id)
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// withArg returns the live processes whose command line contains arg.
func withArg(arg string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || !strings.Contains(string(b), arg) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}
