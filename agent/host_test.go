package agent

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// editorFiles is a host's TextFiles that is never asked here: only its
// identity is checked.
type editorFiles struct{ capabilities.TextFiles }

// A session's host joins what the editor hosts, its roots and its own
// services; the roots are logged (only when there are some), kept by a
// reopened session and widened by it; a child inherits the editor's part
// and has services of its own.
func TestSessionHostRootsAndServices(t *testing.T) {
	dir := t.TempDir()
	p := newScripted([][]llm.Chunk{{text(0, "ok"), finish(llm.FinishStop)}})
	rt, st := knobRuntimeStore(t, dir, true, p)
	files := editorFiles{}
	var asked []string
	host := func(id string) *capabilities.Host {
		asked = append(asked, id)
		return &capabilities.Host{Files: files}
	}
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w", Roots: []string{"/extra/", "/extra"}, Host: host})
	require.NoError(t, err)
	assert.Equal(t, []string{"s-knobs"}, asked, "the host is asked with the session's id")
	h := s.Host()
	assert.Equal(t, []string{"/extra"}, h.Roots)
	assert.Equal(t, files, h.Files)
	assert.Same(t, s, h.Spawner.(*Session))
	assert.Same(t, s, h.Knobs.(*Session))
	assert.Same(t, s.Tools(), h.Tools)
	require.Equal(t, session.EndCompleted, s.Prompt(context.Background(), "hi").Kind)

	child, err := s.Spawn(context.Background(), capabilities.ChildOptions{})
	require.NoError(t, err)
	ch := child.(*Session).Host()
	assert.Equal(t, files, ch.Files, "a child's files go through the parent's editor")
	assert.Equal(t, []string{"/extra"}, ch.Roots)
	assert.Same(t, child, ch.Spawner.(*Session), "the child's services are its own")
	require.NoError(t, child.Close(context.Background()))
	require.NoError(t, s.Close(context.Background()))
	require.NoError(t, st.Close())

	rt2, _ := knobRuntimeStore(t, dir, true, p)
	r, err := rt2.ResumeSession(context.Background(), "s-knobs", SessionOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"/extra"}, r.Host().Roots, "the recorded roots come back")
	assert.Nil(t, r.Host().Files, "no editor this time")
	require.NoError(t, r.Close(context.Background()))

	rt3, _ := knobRuntimeStore(t, dir, true, p)
	r, err = rt3.ResumeSession(context.Background(), "s-knobs", SessionOptions{Roots: []string{"/more", "/extra"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"/extra", "/more"}, r.Host().Roots)
	var logged []string
	for _, e := range r.Log().Events() {
		if e.Type == TypeWorkspaceRoots {
			logged = append(logged, string(e.Data))
		}
	}
	assert.Equal(t, []string{`{"roots":["/extra"]}`, `{"roots":["/extra","/more"]}`}, logged)
	require.NoError(t, r.Close(context.Background()))
}

// Without extra roots nothing is logged for them: such logs stay as
// upstream writes them.
func TestNoRootsNoEvent(t *testing.T) {
	p := newScripted([][]llm.Chunk{{text(0, "ok"), finish(llm.FinishStop)}})
	rt := knobRuntime(t, t.TempDir(), false, p)
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	require.NoError(t, err)
	require.Equal(t, session.EndCompleted, s.Prompt(context.Background(), "hi").Kind)
	for _, e := range s.Log().Events() {
		assert.NotEqual(t, TypeWorkspaceRoots, e.Type)
	}
	assert.Empty(t, s.Host().Roots)
	require.NoError(t, s.Close(context.Background()))
}
