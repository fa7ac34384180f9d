package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-acp/dsh-acp/session"
)

// ErrNoDelete is returned by DeleteSession when the store cannot delete.
var ErrNoDelete = errors.New("the session store cannot delete sessions")

// SessionSummaries returns the stored top-level sessions with the time of
// their last event (a store that cannot tell gives their creation time).
func (r *Runtime) SessionSummaries(ctx context.Context) ([]session.Summary, error) {
	if r.cfg.Store == nil {
		return nil, nil
	}
	var sums []session.Summary
	if s, ok := r.cfg.Store.(session.Summarizer); ok {
		var err error
		if sums, err = s.Summaries(ctx); err != nil {
			return nil, err
		}
	} else {
		hs, err := r.cfg.Store.List(ctx)
		if err != nil {
			return nil, err
		}
		for _, h := range hs {
			sums = append(sums, session.Summary{Header: h, UpdatedAt: h.CreatedAt})
		}
	}
	top := sums[:0]
	for _, s := range sums {
		if s.Header.ParentSession == "" {
			top = append(top, s)
		}
	}
	return top, nil
}

// SessionPage returns one page of the stored sessions q selects, each with
// its title: from the store's index when it keeps one (session.Indexer:
// the cost is the page's), else by Paginate over every summary.
func (r *Runtime) SessionPage(ctx context.Context, q session.ListQuery) (session.Page, error) {
	if x, ok := r.cfg.Store.(session.Indexer); ok {
		keep := q.Keep
		q.Keep = func(s session.Summary) bool {
			return s.Header.ParentSession == "" && (keep == nil || keep(s))
		}
		return x.Page(ctx, q)
	}
	sums, err := r.SessionSummaries(ctx)
	if err != nil {
		return session.Page{}, err
	}
	p, err := session.Paginate(sums, q)
	if err != nil {
		return session.Page{}, err
	}
	for i := range p.Sessions {
		if p.Sessions[i].Title == "" {
			p.Sessions[i].Title = r.SessionTitle(ctx, p.Sessions[i].Header.ID)
		}
	}
	return p, nil
}

// DeleteSession removes a stored session and the child sessions (subagent
// and workflow logs) stored under it. A session some process holds (this
// one included) is refused with the store's *session.HeldError.
func (r *Runtime) DeleteSession(ctx context.Context, id string) error {
	d, ok := r.cfg.Store.(session.Deleter)
	if !ok || r.cfg.Store == nil {
		return ErrNoDelete
	}
	if err := d.Delete(ctx, id); err != nil {
		return err
	}
	hs, err := r.cfg.Store.List(ctx)
	if err != nil {
		return fmt.Errorf("delete the child sessions of %s: %w", id, err)
	}
	var errs []error
	for _, h := range hs {
		if h.ParentSession == id {
			if err := r.DeleteSession(ctx, h.ID); err != nil && !errors.Is(err, session.ErrNotFound) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
