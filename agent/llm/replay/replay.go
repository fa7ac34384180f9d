// Package replay is the model provider of DSH_SNAPSHOT=replay (replay
// contract § 6): it serves the chunk streams recorded in a scenario's
// session logs, or the scripted entries of its replay.override.json, back
// to the agent without ever inspecting the request.
//
// Each log derives a Script (one entry per recorded model call). Scripts are
// bound to live sessions in first-call order — the primary first, then the
// children in the order given — and each session's calls are served
// positionally from its script.
package replay

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"sync"

	"github.com/dsh-acp/dsh-acp/agent/llm"
)

// Provider replays scripted model calls. It implements llm.Provider and is
// safe for concurrent use by several sessions.
type Provider struct {
	scripts []Script

	mu       sync.Mutex
	sessions map[string]*binding
	seen     int // sessions seen so far, recorded or not
}

// binding is one live session's claim on a script.
type binding struct {
	script  int // index into Provider.scripts; -1: unrecorded session
	ordinal int // 1-based position in first-call order
	calls   int // model calls requested so far
}

var _ llm.Provider = (*Provider)(nil)

// New builds a replay provider from fixture paths: primary is the top-level
// session log (session.jsonl); override, when non-empty, is a
// replay.override.json whose script replaces the primary's (the primary log
// must still exist but is not derived); children are the subagent child
// logs (session.<n>.jsonl), already ordered by (createdAt, id). A missing
// file fails with "llm-replay: fixture not found: <path> — …"; a derivation
// or parse error of any used file fails too.
func New(primary, override string, children []string) (*Provider, error) {
	var top Script
	if override != "" {
		if _, err := os.Stat(primary); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, &fixtureNotFoundError{path: primary, err: err}
			}
			return nil, fmt.Errorf("llm-replay: %w", err)
		}
		s, err := LoadOverride(override)
		if err != nil {
			return nil, err
		}
		top = s
	} else {
		s, err := DeriveFile(primary)
		if err != nil {
			return nil, err
		}
		top = s
	}
	kids := make([]Script, 0, len(children))
	for _, path := range children {
		s, err := DeriveFile(path)
		if err != nil {
			return nil, err
		}
		kids = append(kids, s)
	}
	return NewFromScripts(top, kids...), nil
}

// NewFromScripts builds a replay provider from already-derived scripts:
// primary binds to the first session that calls, children to the following
// sessions in the given order.
func NewFromScripts(primary Script, children ...Script) *Provider {
	scripts := make([]Script, 0, 1+len(children))
	scripts = append(scripts, primary)
	scripts = append(scripts, children...)
	return &Provider{scripts: scripts, sessions: map[string]*binding{}}
}

// Stream serves the calling session's next scripted entry. The first call
// of a session not seen before binds it to the next unbound script. The
// entry is claimed when iteration starts, not when Stream is called.
// Cancelling ctx between chunks (or during a hang) fails the stream with an
// error wrapping ctx.Err().
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	var sessionID string
	if req != nil {
		sessionID = req.SessionID
	}
	return func(yield func(llm.Chunk, error) bool) {
		entry, err := p.next(sessionID)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		serve(ctx, entry, yield)
	}
}

// next binds sessionID if needed and claims its next entry.
func (p *Provider) next(sessionID string) (Entry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.sessions[sessionID]
	if !ok {
		p.seen++
		b = &binding{script: -1, ordinal: p.seen}
		if p.seen <= len(p.scripts) {
			b.script = p.seen - 1
		}
		p.sessions[sessionID] = b
	}
	b.calls++
	if b.script < 0 {
		return Entry{}, fmt.Errorf("llm-replay: a model call arrived from an unrecorded session (#%d); "+
			"the scenario recorded only %d session(s) — re-record it", b.ordinal, len(p.scripts))
	}
	script := p.scripts[b.script]
	if b.calls > len(script) {
		return Entry{}, fmt.Errorf("llm-replay: script exhausted — session requested model call #%d "+
			"but its script has only %d; re-record the scenario", b.calls, len(script))
	}
	return script[b.calls-1], nil
}

// serve yields one entry's chunks and its terminal failure, if any.
func serve(ctx context.Context, e Entry, yield func(llm.Chunk, error) bool) {
	chunks := e.Chunks
	if e.Kind == KindHang {
		chunks = hangChunks()
	}
	for _, c := range chunks {
		if ctx.Err() != nil {
			yield(llm.Chunk{}, aborted(ctx))
			return
		}
		if !yield(c, nil) {
			return
		}
	}
	switch e.Kind {
	case KindThrow:
		yield(llm.Chunk{}, &llm.Error{Message: e.Message, Code: e.Code, Status: e.Status})
	case KindHang:
		<-ctx.Done()
		yield(llm.Chunk{}, aborted(ctx))
	}
}

// aborted is the error of a request whose context is done; it wraps
// ctx.Err() (context.Canceled on a cancel).
func aborted(ctx context.Context) error {
	return fmt.Errorf("llm-replay: request aborted: %w", ctx.Err())
}
