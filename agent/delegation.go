package agent

import (
	"fmt"
	"sync"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// Delegation bounds the child agents of a session and of all its
// descendants together (subagents, forks, workflow children, background
// subagents, at every depth): one count per session tree, kept at the
// spawn seam, so nested workflows cannot multiply it. Zero fields mean no
// bound, as upstream.
type Delegation struct {
	// MaxLive caps the child agents alive at once.
	MaxLive int
	// MaxPerTurn caps the child agents started during one turn of the
	// session (the root of the tree).
	MaxPerTurn int
	// MaxModelCalls caps the model calls the whole tree makes during one
	// turn of the session, its own included. A child that would make one
	// more ends its turn with CodeDelegationLimit (its parent's model is
	// told why); the session itself is bounded by Config.MaxSteps
	// instead, so its model always sees the error.
	MaxModelCalls int
}

// CodeDelegationLimit ends a child's turn that reached
// Delegation.MaxModelCalls (capabilities.CodeDelegationLimit).
const CodeDelegationLimit = capabilities.CodeDelegationLimit

// family is the delegation state of one session tree, shared by the root
// session and every descendant.
type family struct {
	limits Delegation
	root   *Session

	mu      sync.Mutex
	live    int
	turn    int // the root's turn the per-turn counts belong to
	started int // children started during that turn
	calls   int // model calls made during that turn
}

// sync moves the per-turn counts to the root's current turn
// (f.mu held).
func (f *family) syncLocked() {
	if t := session.LastTurn(f.root.log.Events()); t != f.turn {
		f.turn, f.started, f.calls = t, 0, 0
	}
}

// admit counts a child about to be started, or says which ceiling
// forbids it.
func (f *family) admit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncLocked()
	l := f.limits
	switch {
	case l.MaxLive > 0 && f.live >= l.MaxLive:
		return fmt.Errorf("delegation limit reached: %d child agents of this session are running (the limit, delegation.maxLiveChildren); "+
			"wait for one to finish, or do the work yourself", f.live)
	case l.MaxPerTurn > 0 && f.started >= l.MaxPerTurn:
		return fmt.Errorf("delegation limit reached: %d child agents were started in this turn (the limit, delegation.maxChildrenPerTurn); "+
			"do the rest of the work yourself", f.started)
	case l.MaxModelCalls > 0 && f.calls >= l.MaxModelCalls:
		return fmt.Errorf("delegation limit reached: the agents of this session made %d model calls in this turn (the limit, "+
			"delegation.maxModelCallsPerTurn); no more child agents can start in this turn, so do the rest of the work yourself", f.calls)
	}
	f.live++
	f.started++
	return nil
}

// release counts a child that was closed.
func (f *family) release() {
	f.mu.Lock()
	f.live--
	f.mu.Unlock()
}

// modelCall counts one model call of s (a member of the tree) and, for a
// child past the ceiling, returns the end of its turn instead.
func (f *family) modelCall(s *Session, step int) (session.EndReason, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncLocked()
	if max := f.limits.MaxModelCalls; max > 0 && s.depth > 0 && f.calls >= max {
		return session.EndReason{Kind: session.EndError, Step: step - 1, Code: CodeDelegationLimit, Message: fmt.Sprintf(
			"stopped: the agents of this session made %d model calls in this turn (the limit, delegation.maxModelCallsPerTurn); "+
				"report what was done so far and do the rest without child agents", f.calls)}, true
	}
	f.calls++
	return session.EndReason{}, false
}

// stepAllowed counts the step's model call against the session tree's
// ceiling; ok=false ends the turn with end.
func (s *Session) stepAllowed(step int) (end session.EndReason, ok bool) {
	if s.family == nil {
		return session.EndReason{}, true
	}
	end, stop := s.family.modelCall(s, step)
	return end, !stop
}
