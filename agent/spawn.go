package agent

import (
	"context"
	"fmt"
	"sync"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// modelID is the model this session's requests name: a child's override,
// else the runtime's.
func (s *Session) modelID() string {
	if s.model != "" {
		return s.model
	}
	return s.knobModel()
}

// Spawn starts a child agent of s (capabilities.Spawner): a full agent of
// the same runtime — the same prompt assembly, tools and composed pipeline
// members, built fresh for the child — with its own log in the same store
// (subagents-workflows § 1). The child's header names s as parentSession
// and copies its cwd. A fork child is seeded with s's events through the
// last turn/end (the completed turns; the turn calling the tool is left
// out), copied verbatim, and its log is written at once; a fork of a
// session with no completed turn has no seed, like a spawn. The child is
// never shown to the editor and does not run the session-start members.
//
// Every child crosses this seam, however it was asked for (subagent,
// subagent_fork, a workflow's agent(), a background subagent, any of
// them from run_code or from another child), so the rules of delegation
// live here: the child inherits s's effective sandbox mode, approval
// policy and session mode, and s's hook bridges (see inherit), and the
// session tree's delegation ceilings (Config.Delegation) are counted.
func (s *Session) Spawn(ctx context.Context, o capabilities.ChildOptions) (capabilities.Child, error) {
	r := s.rt
	if max := r.cfg.MaxChildDepth; max > 0 && s.depth >= max {
		return nil, fmt.Errorf("subagent depth limit reached: this agent is %d levels below the session (the limit) and cannot start another child; do the work itself", s.depth)
	}
	if s.family != nil {
		if err := s.family.admit(); err != nil {
			return nil, err
		}
	}
	h := session.Header{ID: r.cfg.NewID(), CreatedAt: r.cfg.Clock(), Cwd: s.Cwd(), ParentSession: s.ID()}
	if o.Model == "" {
		o.Model = s.modelID()
	}
	var seed []session.Event
	if end, ok := s.log.Last(session.TypeTurnEnd); ok && o.Fork {
		var err error
		if seed, err = s.log.Prefix(ctx, end.Seq+1); err != nil {
			if s.family != nil {
				s.family.release()
			}
			return nil, fmt.Errorf("read the fork child's seed: %w", err)
		}
	}
	h.SeedLength = len(seed)
	if len(seed) > 0 && r.cfg.Store != nil {
		if err := r.cfg.Store.Append(context.WithoutCancel(ctx), h, seed); err != nil {
			if s.family != nil {
				s.family.release()
			}
			return nil, fmt.Errorf("write the fork child's seed: %w", err)
		}
	}
	ch := s.childHost()
	child := r.openChild(session.ResumeLog(h, seed, r.cfg.Clock, r.cfg.Store), s, ch, ch.Roots, o)
	child.depth = s.depth + 1
	child.onSpawn = s.onSpawn
	s.inherit(child)
	r.children.add(child)
	if s.onSpawn != nil {
		s.onSpawn(s, child, o.Title)
	}
	if s.pipe.HasWatchers() {
		// SubagentStart: its context reaches the child before its first
		// prompt (an injection turn of its own); SubagentStop runs when the
		// child is closed.
		child.watcher = s.pipe
		if c := s.pipe.StartSubagent(ctx, child); c != nil {
			child.inject(session.Message{Content: c.Content, Source: c.Source})
		}
	}
	return child, nil
}

// Root returns the top-level session s descends from (s itself for a
// session the editor opened).
func (s *Session) Root() *Session {
	if s.parent == nil {
		return s
	}
	return s.parent.Root()
}

// RootOf returns the id of the top-level session a live child agent
// descends from, and whether id names a live child of this runtime. The
// bridge asks it to put a child's permission request to the user of the
// session the child works for.
func (r *Runtime) RootOf(id string) (string, bool) {
	c, ok := r.children.get(id)
	if !ok {
		return "", false
	}
	return c.Root().ID(), true
}

// liveChildren are a runtime's live child agents by id.
type liveChildren struct {
	mu   sync.Mutex
	byID map[string]*Session
}

func (l *liveChildren) add(c *Session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byID == nil {
		l.byID = map[string]*Session{}
	}
	l.byID[c.ID()] = c
}

func (l *liveChildren) get(id string) (*Session, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.byID[id]
	return c, ok
}

func (l *liveChildren) remove(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byID, id)
}

// closedChild is told that child s was closed: the tree's live count and
// the runtime's index drop it (once).
func (s *Session) closedChild() {
	s.mu.Lock()
	gone := s.released || s.parent == nil
	s.released = true
	s.mu.Unlock()
	if gone {
		return
	}
	s.rt.children.remove(s.ID())
	if s.family != nil {
		s.family.release()
	}
}
