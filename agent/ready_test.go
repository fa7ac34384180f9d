package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
	"github.com/dsh-acp/dsh-acp/session/storetest"
)

// storeFiles lists the files below dir.
func storeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "sessions.index" { // the store's list index
			out = append(out, filepath.Base(p))
		}
		return err
	}))
	return out
}

// Ready takes a new session's lock ahead of its first prompt (another
// store cannot take the session meanwhile), the prompt's log lands as
// without it, and a ready session closed without a prompt leaves no file.
func TestReadyPreparesTheFirstWrite(t *testing.T) {
	dir := t.TempDir()
	p := newScripted([][]llm.Chunk{{text(0, "ok"), finish(llm.FinishStop)}})
	rt, _ := knobRuntimeStore(t, dir, true, p)
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	require.NoError(t, err)
	s.Ready()
	s.Ready() // once is enough; a second call does nothing
	require.Eventually(t, func() bool { return len(storeFiles(t, dir)) == 1 }, 5*time.Second, 5*time.Millisecond, "the lock file")
	other, err := jsonl.Open(dir)
	require.NoError(t, err)
	defer other.Close()
	_, _, err = other.Load(context.Background(), s.ID())
	require.Error(t, err, "nothing to load yet")
	g := storetest.NewGen(0)
	g.Turn(1, 1)
	err = other.Append(context.Background(), s.Log().Header(), g.Take())
	require.True(t, errors.Is(err, session.ErrHeld), "the lock is held before the first prompt: %v", err)

	require.Equal(t, session.EndCompleted, s.Prompt(context.Background(), "hi").Kind)
	require.NoError(t, s.Close(context.Background()))
	_, events, err := other.Load(context.Background(), s.ID())
	require.NoError(t, err)
	assert.NotEmpty(t, events)

	// A new session made ready and closed without a prompt: nothing stays.
	dir2 := t.TempDir()
	rt2, _ := knobRuntimeStore(t, dir2, true, p)
	s2, err := rt2.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	require.NoError(t, err)
	s2.Ready()
	require.NoError(t, s2.Close(context.Background()))
	assert.Empty(t, storeFiles(t, dir2))
}
