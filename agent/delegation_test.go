package agent

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
)

// treeRuntime is a runtime with knobs, modes, an approval service and
// delegation ceilings d; ids are unique.
func treeRuntime(d Delegation) *Runtime {
	var n atomic.Int64
	ok := []llm.Chunk{text(0, "ok"), finish(llm.FinishStop)}
	p := newScripted([][]llm.Chunk{ok, ok, ok, ok})
	return NewRuntime(Config{Model: "m", Provider: p, Clock: func() int64 { return 0 },
		NewID: func() string { return fmt.Sprintf("s-%d", n.Add(1)) }, Log: zerolog.Nop(),
		SandboxDefault: "workspace-write", Approval: approval.NewService("ask", func() string { return "a" }),
		Modes: []ModeDef{PlanMode()}, DurableKnobs: true, Delegation: d, NetworkDefault: NetworkOff})
}

// A child starts with its parent's effective boundaries, held switches
// included, and its grandchild with the same.
func TestChildInheritsTheEffectiveBoundaries(t *testing.T) {
	rt := treeRuntime(Delegation{})
	ctx := context.Background()
	s, err := rt.NewSession(ctx, SessionOptions{Cwd: "/w"})
	require.NoError(t, err)
	s.SetKnob(KnobSandboxMode, "read-only") // idle: held for the next turn
	s.SetKnob(KnobApprovalPolicy, "never")
	require.NoError(t, s.SetMode("plan"))
	require.Equal(t, "completed", s.Prompt(ctx, "anchor").Kind, "anchors the held switches")
	s.SetKnob(KnobNetwork, NetworkOn) // held: the log says off, the narrower
	c, err := s.Spawn(ctx, capabilities.ChildOptions{})
	require.NoError(t, err)
	child := c.(*Session)
	g, err := child.Spawn(ctx, capabilities.ChildOptions{Fork: true})
	require.NoError(t, err)
	for _, x := range []*Session{child, g.(*Session)} {
		mode, _ := x.Knob(KnobSandboxMode)
		assert.Equal(t, "read-only", mode)
		pol, _ := x.Knob(KnobApprovalPolicy)
		assert.Equal(t, "never", pol)
		assert.Equal(t, "plan", x.Mode())
		net, _ := x.Knob(KnobNetwork)
		assert.Equal(t, NetworkOff, net)
	}
	require.Equal(t, "completed", child.Prompt(ctx, "go").Kind)
	assert.Equal(t, approval.PolicyNever, rt.cfg.Approval.Policy(child.Log().Events()), "anchored at the child's first turn")
	assert.Equal(t, "plan", child.LoggedMode())
	root, ok := rt.RootOf(g.ID())
	assert.True(t, ok)
	assert.Equal(t, s.ID(), root, "a grandchild's requests go to the root session")
	require.NoError(t, g.Close(ctx))
	require.NoError(t, child.Close(ctx))
	_, ok = rt.RootOf(child.ID())
	assert.False(t, ok, "a closed child is forgotten")
	require.NoError(t, s.Close(ctx))

	assert.Equal(t, "read-only", narrower(builtinKnobs[0].Narrowest, "danger-full-access", "read-only"))
	assert.Equal(t, "workspace-write", narrower(builtinKnobs[0].Narrowest, "workspace-write", "bogus"), "an unknown value is the widest")
}

// The live-children ceiling holds for a whole tree under concurrent
// spawns and closes, and frees up as children close.
func TestLiveChildrenCeilingUnderConcurrency(t *testing.T) {
	rt := treeRuntime(Delegation{MaxLive: 3})
	ctx := context.Background()
	s, err := rt.NewSession(ctx, SessionOptions{Cwd: "/w"})
	require.NoError(t, err)
	var live, peak atomic.Int64
	var refused atomic.Int64
	var wg sync.WaitGroup
	for range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := s.Spawn(ctx, capabilities.ChildOptions{})
			if err != nil {
				assert.Contains(t, err.Error(), "delegation.maxLiveChildren")
				refused.Add(1)
				return
			}
			n := live.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			live.Add(-1)
			assert.NoError(t, c.Close(ctx))
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, peak.Load(), int64(3))
	assert.Equal(t, 0, s.family.live, "every close was counted")
	for range 3 {
		_, err := s.Spawn(ctx, capabilities.ChildOptions{})
		require.NoError(t, err)
	}
	_, err = s.Spawn(ctx, capabilities.ChildOptions{})
	require.ErrorContains(t, err, "3 child agents of this session are running")
	require.NoError(t, s.Close(ctx))
}
