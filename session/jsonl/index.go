package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/session"
)

// indexName is the store's list index, `<root>/sessions.index`: one JSON
// line per write of a session, {"header":…,"updated":…,"title"?:…}, or
// {"deleted":id}; the latest line of an id wins (a line without a title
// keeps the one before). Every write of a session appends its line, so a
// listing reads only what was written since it last looked, whichever
// process wrote it. The index is a cache of the logs: a root without one
// (a store an older build wrote) gets it built from a full scan on the
// first listing, and a session missing from it is still found by Lookup
// and Load. It is rewritten, one line per session, once it holds many
// more lines than sessions; a line another process appends to the old
// file during that rename is lost to the index (its session shows its
// previous update until its next write).
const indexName = "sessions.index"

// indexLine is one line of the index file.
type indexLine struct {
	Header  *session.Header `json:"header,omitempty"`
	Updated int64           `json:"updated,omitempty"`
	Title   string          `json:"title,omitempty"`
	Deleted string          `json:"deleted,omitempty"`
}

// listIndex is the store's view of its index file.
type listIndex struct {
	mu    sync.Mutex // serializes the file's writes and this view
	ready bool       // sums holds the file up to off
	file  os.FileInfo
	off   int64
	lines int
	sums  session.SummaryIndex
}

var _ session.Indexer = (*Store)(nil)

func (s *Store) indexPath() string { return filepath.Join(s.root, indexName) }

// noteWrite appends the index line of a write of events to the session h
// (e.mu is held): its last event's time and, when events hold its first
// titled user message, its title.
func (s *Store) noteWrite(e *entry, h session.Header, events []session.Event) {
	if len(events) == 0 {
		return
	}
	line := indexLine{Header: &h, Updated: events[len(events)-1].Time}
	if !e.titled {
		if t := session.FirstTitle(events); t != "" {
			line.Title, e.titled = t, true
		}
	}
	s.appendIndex(line)
}

// appendIndex appends one line to the index file, if there is one: a
// root without an index gets it from a full scan, which sees this write.
func (s *Store) appendIndex(line indexLine) {
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	x := &s.lists
	x.mu.Lock()
	defer x.mu.Unlock()
	f, err := os.OpenFile(s.indexPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	_, _ = f.Write(append(b, '\n'))
	_ = f.Close()
}

// refresh brings the view up to the index file (x.mu is held): it reads
// the lines written since the last look, the whole file when it was
// replaced, and builds the file from a scan when there is none.
func (s *Store) refresh(ctx context.Context) error {
	x := &s.lists
	fi, err := os.Stat(s.indexPath())
	if errors.Is(err, fs.ErrNotExist) {
		return s.rebuildIndex(ctx)
	}
	if err != nil {
		return fmt.Errorf("read session index: %w", err)
	}
	if !x.ready || !os.SameFile(fi, x.file) || fi.Size() < x.off {
		x.ready, x.off, x.lines, x.sums = false, 0, 0, session.SummaryIndex{}
	}
	if x.ready && fi.Size() == x.off {
		return nil
	}
	f, err := os.Open(s.indexPath())
	if err != nil {
		return fmt.Errorf("read session index: %w", err)
	}
	defer f.Close()
	buf := make([]byte, fi.Size()-x.off)
	n, err := f.ReadAt(buf, x.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read session index: %w", err)
	}
	buf = buf[:n]
	end := bytes.LastIndexByte(buf, '\n') + 1 // a line still being written waits
	if x.off == 0 {
		// A whole file: fold it, then sort once.
		var sums []session.Summary
		deleted := map[string]bool{}
		for line := range bytes.Lines(buf[:end]) {
			var l indexLine
			if json.Unmarshal(line, &l) != nil {
				continue
			}
			x.lines++
			switch {
			case l.Deleted != "":
				deleted[l.Deleted] = true
			case l.Header != nil:
				delete(deleted, l.Header.ID)
				sums = append(sums, session.Summary{Header: *l.Header, UpdatedAt: l.Updated, Title: l.Title})
			}
		}
		x.sums.Load(sums)
		for id := range deleted {
			x.sums.Remove(id)
		}
	} else {
		for line := range bytes.Lines(buf[:end]) {
			x.apply(line)
		}
	}
	x.off += int64(end)
	x.file, x.ready = fi, true
	if x.lines > 2*x.sums.Len()+256 {
		return s.writeIndex(x.sums.All())
	}
	return nil
}

// apply folds one index line into the view.
func (x *listIndex) apply(line []byte) {
	var l indexLine
	if json.Unmarshal(line, &l) != nil {
		return
	}
	x.lines++
	switch {
	case l.Deleted != "":
		x.sums.Remove(l.Deleted)
	case l.Header != nil:
		x.sums.Put(session.Summary{Header: *l.Header, UpdatedAt: l.Updated, Title: l.Title})
	}
}

// rebuildIndex scans every stored log (header, last event's time, title)
// and writes the index from it (x.mu is held).
func (s *Store) rebuildIndex(ctx context.Context) error {
	sums, err := s.scanSummaries(ctx)
	if err != nil {
		return err
	}
	return s.writeIndex(sums)
}

// writeIndex replaces the index file with one line per summary (x.mu is
// held) and takes it as the view.
func (s *Store) writeIndex(sums []session.Summary) error {
	x := &s.lists
	var b bytes.Buffer
	x.sums = session.SummaryIndex{}
	for _, sm := range sums {
		line, err := json.Marshal(indexLine{Header: &sm.Header, Updated: sm.UpdatedAt, Title: sm.Title})
		if err != nil {
			continue
		}
		b.Write(line)
		b.WriteByte('\n')
		x.sums.Put(sm)
	}
	tmp, err := os.CreateTemp(s.root, indexName+".*.tmp")
	if err != nil {
		return fmt.Errorf("write session index: %w", err)
	}
	_, err = tmp.Write(b.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.indexPath())
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write session index: %w", err)
	}
	fi, err := os.Stat(s.indexPath())
	if err != nil {
		return fmt.Errorf("write session index: %w", err)
	}
	x.file, x.off, x.lines, x.ready = fi, fi.Size(), len(sums), true
	return nil
}

// startIndex gives a root that holds no session yet its (empty) index,
// so every write is indexed from the first; a root with sessions and no
// index is indexed by a scan at its first listing.
func (s *Store) startIndex() error {
	if _, err := os.Stat(s.indexPath()); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			return nil
		}
	}
	x := &s.lists
	x.mu.Lock()
	defer x.mu.Unlock()
	return s.writeIndex(nil)
}

// Page implements session.Indexer from the index.
func (s *Store) Page(ctx context.Context, q session.ListQuery) (session.Page, error) {
	if err := s.usable(ctx); err != nil {
		return session.Page{}, err
	}
	x := &s.lists
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := s.refresh(ctx); err != nil {
		return session.Page{}, err
	}
	return x.sums.Page(q)
}

// Lookup implements session.Indexer: the session's summary from the
// index, else (a log the index does not know yet) from its file.
func (s *Store) Lookup(ctx context.Context, id string) (session.Summary, error) {
	if err := s.usable(ctx); err != nil {
		return session.Summary{}, err
	}
	x := &s.lists
	x.mu.Lock()
	err := s.refresh(ctx)
	sm, ok := x.sums.Get(id)
	x.mu.Unlock()
	if err == nil && ok {
		return sm, nil
	}
	name, err := EncodeID(id)
	if err != nil {
		return session.Summary{}, fmt.Errorf("look up session %q: %w", id, err)
	}
	path, err := s.find(name)
	if err != nil {
		return session.Summary{}, fmt.Errorf("look up session %q: %w", id, err)
	}
	if path == "" {
		return session.Summary{}, &NotFoundError{ID: id}
	}
	h, err := readHeader(path)
	if err != nil {
		return session.Summary{}, fmt.Errorf("look up session %q: %w", id, err)
	}
	return session.Summary{Header: h, UpdatedAt: lastTime(path, h.CreatedAt), Title: fileTitle(path)}, nil
}

// usable fails for a cancelled context or a closed store.
func (s *Store) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// fileTitle reads the log at path up to its first titled user message (at
// most 1 MiB) and returns its title, or "".
func fileTitle(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	read := 0
	for sc.Scan() && read < 1<<20 {
		line := sc.Bytes()
		read += len(line)
		if !strings.Contains(string(line[:min(len(line), 40)]), `"user/message"`) {
			continue
		}
		var ev session.Event
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		if t := session.FirstTitle([]session.Event{ev}); t != "" {
			return t
		}
	}
	return ""
}
