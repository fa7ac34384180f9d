package agent

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/jsonl"
)

// knobRuntime is a runtime over a real JSONL store in dir with the
// sandbox and approval knobs and plan mode composed.
func knobRuntime(t *testing.T, dir string, durable bool, p llm.Provider) *Runtime {
	rt, _ := knobRuntimeStore(t, dir, durable, p)
	return rt
}

// knobRuntimeStore is knobRuntime that also returns its store (closing it
// is what a process death does to the store's session locks).
func knobRuntimeStore(t *testing.T, dir string, durable bool, p llm.Provider) (*Runtime, *jsonl.Store) {
	t.Helper()
	st, err := jsonl.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	var now int64
	return NewRuntime(Config{
		Model: "m", Provider: p, Store: st, Clock: func() int64 { now++; return now }, NewID: func() string { return "s-knobs" },
		Log: zerolog.Nop(), SandboxDefault: "workspace-write", Approval: approval.NewService("ask", func() string { return "a" }),
		Modes: []ModeDef{PlanMode()}, DurableKnobs: durable,
	}), st
}

func TestAnAcknowledgedKnobSurvivesACrash(t *testing.T) {
	dir := t.TempDir()
	p := newScripted([][]llm.Chunk{{text(0, "ok"), finish(llm.FinishStop)}})
	rt, st := knobRuntimeStore(t, dir, true, p)
	s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	require.NoError(t, err)
	s.SetKnob(KnobSandboxMode, "danger-full-access")
	require.Equal(t, session.EndCompleted, s.Prompt(context.Background(), "hi").Kind)
	s.SetKnob(KnobSandboxMode, "read-only") // idle: held for the next turn
	s.SetKnob(KnobApprovalPolicy, "never")
	require.NoError(t, s.SetMode("plan"))
	// The process dies here: no Close, no further flush. A new process
	// loads the session from disk (the dead process's locks are gone).
	require.NoError(t, st.Close())
	rt2 := knobRuntime(t, dir, true, p)
	s2, err := rt2.ResumeSession(context.Background(), "s-knobs", SessionOptions{})
	require.NoError(t, err)
	v, _ := s2.Knob(KnobSandboxMode)
	require.Equal(t, "read-only", v)
	v, _ = s2.Knob(KnobApprovalPolicy)
	require.Equal(t, "never", v)
	require.Equal(t, "plan", s2.Mode())
}

func TestAPendingRecordIsConsumedByTheNextTurn(t *testing.T) {
	dir := t.TempDir()
	p := newScripted([][]llm.Chunk{{text(0, "ok"), finish(llm.FinishStop)}, {text(0, "ok"), finish(llm.FinishStop)}})
	rt := knobRuntime(t, dir, true, p)
	s, _ := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	s.SetKnob(KnobSandboxMode, "read-only")
	require.Equal(t, session.EndCompleted, s.Prompt(context.Background(), "hi").Kind) // anchors read-only
	// Switched back while idle: recorded, then anchored by the next turn.
	s.SetKnob(KnobSandboxMode, "workspace-write")
	require.Equal(t, session.EndCompleted, s.Prompt(context.Background(), "again").Kind)
	require.NoError(t, s.Close(context.Background()))
	s2, err := knobRuntime(t, dir, true, p).ResumeSession(context.Background(), "s-knobs", SessionOptions{})
	require.NoError(t, err)
	v, _ := s2.Knob(KnobSandboxMode)
	require.Equal(t, "workspace-write", v)
	s2.mu.Lock()
	require.Empty(t, s2.pending, "records consumed by a turn are not restored")
	s2.mu.Unlock()
}

func TestWithoutDurableKnobsTheLogKeepsTheContract(t *testing.T) {
	dir := t.TempDir()
	p := newScripted(nil)
	rt := knobRuntime(t, dir, false, p)
	s, _ := rt.NewSession(context.Background(), SessionOptions{Cwd: "/w"})
	s.SetKnob(KnobSandboxMode, "read-only")
	for _, e := range s.Log().Events() {
		require.NotEqual(t, TypeKnobPending, e.Type)
	}
}
