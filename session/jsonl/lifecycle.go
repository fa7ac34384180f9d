package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/lock"
)

var (
	_ session.Summarizer = (*Store)(nil)
	_ session.Deleter    = (*Store)(nil)
)

// tailBytes is the most of a log's end Summaries reads to find its last
// event; it reads a small tail first (the last event is usually a short
// turn/end).
const tailBytes = 64 << 10

// Summaries implements session.Summarizer: every stored session's
// summary, from the list index.
func (s *Store) Summaries(ctx context.Context) ([]session.Summary, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	x := &s.lists
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := s.refresh(ctx); err != nil {
		return nil, err
	}
	return x.sums.All(), nil
}

// scanSummaries reads every stored session's summary from its log: the
// header (first line), the time of its last complete event (read from the
// file's tail) and its title.
func (s *Store) scanSummaries(ctx context.Context) ([]session.Summary, error) {
	hs, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]session.Summary, 0, len(hs))
	for _, h := range hs {
		name, err := EncodeID(h.ID)
		if err != nil {
			continue
		}
		p := filepath.Join(s.root, Bucket(h.Cwd), name+fileExt)
		if _, err := os.Stat(p); err != nil {
			if p, err = s.find(name); err != nil || p == "" {
				continue
			}
		}
		out = append(out, session.Summary{Header: h, UpdatedAt: lastTime(p, h.CreatedAt), Title: fileTitle(p)})
	}
	return out, nil
}

// lastTime returns the time of the last complete event line of the log at
// path, or created when it has none (or the tail cannot be read).
func lastTime(path string, created int64) int64 {
	f, err := os.Open(path)
	if err != nil {
		return created
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return created
	}
	for _, n := range []int64{4 << 10, tailBytes} {
		off := max(st.Size()-n, 0)
		buf := make([]byte, st.Size()-off)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return created
		}
		if t, ok := lastEventTime(buf, off > 0); ok {
			return t
		}
		if off == 0 {
			break
		}
	}
	return created
}

// lastEventTime finds the time of the last complete event line in a
// log's tail; partial says the tail's first line may be cut.
func lastEventTime(buf []byte, partial bool) (int64, bool) {
	lines := bytes.Split(buf, []byte{'\n'})
	// The last element follows the final newline: empty, or a torn line.
	for i := len(lines) - 2; i >= 0; i-- {
		if partial && i == 0 {
			break
		}
		var ev struct {
			Type string `json:"type"`
			Time *int64 `json:"time"`
		}
		if json.Unmarshal(lines[i], &ev) == nil && ev.Time != nil && ev.Type != "session" {
			return *ev.Time, true
		}
	}
	return 0, false
}

// Delete implements session.Deleter: it takes the session's lock, removes
// its log (durably: the directory is synced) and gives the lock up. A
// session this store or another process holds is refused.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name, err := EncodeID(id)
	if err != nil {
		return fmt.Errorf("delete session %q: %w", id, err)
	}
	e, err := s.lockEntry(id)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	if e.held != nil {
		return &session.HeldError{ID: id, Holder: lock.ReadHolder(e.held.Path())}
	}
	path, err := s.find(name)
	if err != nil {
		return fmt.Errorf("delete session %q: %w", id, err)
	}
	if path == "" {
		return &NotFoundError{ID: id}
	}
	if err := s.own(e, id, path); err != nil {
		return err
	}
	defer func() { _ = s.releaseEntry(e) }()
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &NotFoundError{ID: id}
		}
		return fmt.Errorf("delete session %q: %w", id, err)
	}
	e.path, e.next = "", 0
	s.appendIndex(indexLine{Deleted: id})
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("delete session %q: %w", id, err)
	}
	return nil
}
