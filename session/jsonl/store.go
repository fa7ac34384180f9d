// Package jsonl is the default session store: one JSONL file per session,
// `<root>/<bucket>/<encoded id>.jsonl`, line 0 the header and every further
// line one event (session-log contract § 6).
//
// New sessions are materialized atomically (temp file, fsync, hard link,
// directory fsync); later batches are appended and fsynced, and truncated
// back when the write fails. Load keeps the longest parseable seq-contiguous
// prefix, truncates a torn tail after the last turn/end, and persists the
// crash-repair closers of a turn left open.
//
// One owner per session (session.Owner): Load and the first Append of a
// session take an exclusive flock on `<bucket>/<encoded id>.lock` (package
// session/lock) before touching the log, and keep it until Release or
// Close, so two processes never append to (or repair) one log.
package jsonl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/lock"
)

// ErrClosed is returned by operations on a closed Store.
var ErrClosed = errors.New("jsonl session store is closed")

// Store is a session.Store over a directory tree. It is safe for concurrent
// use; writes to one session are serialized, different sessions proceed in
// parallel. Several Stores (in one process or several) may share a root:
// each session is written only by the Store that holds its lock.
type Store struct {
	root string

	mu     sync.Mutex // guards closed and index
	closed bool
	index  map[string]*entry

	lists listIndex // the list index (sessions.index)
}

// entry is the in-memory index record of one session id. Entries are never
// removed, so two goroutines can never hold different locks for one id.
type entry struct {
	mu   sync.Mutex // serializes file access for the session
	path string     // "" while the session's file is unknown (or not held)
	next int        // next seq to append; valid when path != ""
	lazy bool       // written without fsync since the last durable write
	// titled says the session's title is in the list index (its first
	// titled user message was written); valid when path != "".
	titled bool
	held   *lock.File // the session's ownership lock (session.Owner)
	// planned is the path a new session's file will have, set by Prepare
	// once the bucket exists and the lock is held ("" when not prepared).
	planned string
	// dirs reports the background fsync of the directories of a lazily
	// created file (nil when none is pending).
	dirs chan error
}

var (
	_ session.Store      = (*Store)(nil)
	_ session.LazyWriter = (*Store)(nil)
	_ session.Owner      = (*Store)(nil)
	_ session.Preparer   = (*Store)(nil)
	_ session.Reader     = (*Store)(nil)
)

// Open returns a store rooted at root, creating the directory (mode 0700) if
// needed.
func Open(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("open jsonl session store: empty root")
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("open jsonl session store: %w", err)
	}
	s := &Store{root: root, index: map[string]*entry{}}
	if err := s.startIndex(); err != nil {
		return nil, fmt.Errorf("open jsonl session store: %w", err)
	}
	return s, nil
}

// Root returns the directory the store was opened on.
func (s *Store) Root() string { return s.root }

// Path returns the file a session with header h is (or would be) written to
// when it is not stored yet: `<root>/<Bucket(h.Cwd)>/<EncodeID(h.ID)>.jsonl`.
func (s *Store) Path(h session.Header) (string, error) {
	name, err := EncodeID(h.ID)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.root, Bucket(h.Cwd), name+fileExt), nil
}

// Close marks the store closed and releases the sessions it holds. Between
// calls it keeps open only the lock files of the sessions it holds.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	entries := make([]*entry, 0, len(s.index))
	for _, e := range s.index {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	var errs []error
	for _, e := range entries {
		e.mu.Lock()
		errs = append(errs, s.releaseEntry(e))
		e.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Release implements session.Owner: it gives up the store's hold on the
// session id (after forcing its lazy writes to disk). The next Load or
// Append re-reads the file and takes the lock again.
func (s *Store) Release(id string) error {
	s.mu.Lock()
	e := s.index[id]
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return s.releaseEntry(e)
}

// releaseEntry syncs and unlocks a held entry; e.mu is held. The lock
// file of a prepared session that was never written is removed: no other
// process can know the id of a log that never existed, so none can be
// waiting on that file.
func (s *Store) releaseEntry(e *entry) error {
	if e.held == nil {
		return nil
	}
	err := s.syncEntry(e, false)
	if rerr := e.held.Release(); err == nil {
		err = rerr
	}
	if e.path == "" && e.planned != "" {
		if rerr := os.Remove(lockPath(e.planned)); err == nil && rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = rerr
		}
	}
	e.held, e.path, e.next, e.planned = nil, "", 0, ""
	return err
}

// Prepare implements session.Preparer: for the new session h it checks
// that no stored log has its id, creates its bucket and takes its lock, so
// that the first Append or Write only creates the file. It is a no-op for
// a session already written or held here, or stored by anyone.
func (s *Store) Prepare(ctx context.Context, h session.Header) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name, err := EncodeID(h.ID)
	if err != nil {
		return fmt.Errorf("prepare session %q: %w", h.ID, err)
	}
	e, err := s.lockEntry(h.ID)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	if e.path != "" || e.held != nil {
		return nil
	}
	if found, err := s.find(name); err != nil || found != "" {
		return err // a stored log: the first append recovers it as usual
	}
	path := filepath.Join(s.root, Bucket(h.Cwd), name+fileExt)
	if err := ensureDir(s.root, filepath.Dir(path), false); err != nil {
		return fmt.Errorf("prepare session %q: %w", h.ID, err)
	}
	if err := s.own(e, h.ID, path); err != nil {
		return err
	}
	e.planned = path
	return nil
}

// own takes the ownership lock of the session whose log is (or will be) at
// path, unless the entry holds it already; e.mu is held.
func (s *Store) own(e *entry, id, path string) error {
	if e.held != nil {
		return nil
	}
	l, err := lock.Acquire(lockPath(path), id)
	if err != nil {
		return err
	}
	e.held = l
	return nil
}

// lockPath is the lock file of the log at path: `<bucket>/<encoded id>.lock`.
func lockPath(path string) string { return strings.TrimSuffix(path, fileExt) + lockExt }

// lockEntry returns the locked index entry of id.
func (s *Store) lockEntry(id string) (*entry, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	e := s.index[id]
	if e == nil {
		e = &entry{}
		s.index[id] = e
	}
	s.mu.Unlock()
	e.mu.Lock()
	return e, nil
}

// Append persists events, which must continue the stored seq exactly. The
// first batch of a session materializes its file with header h.
func (s *Store) Append(ctx context.Context, h session.Header, events []session.Event) error {
	return s.append(ctx, h, events, true)
}

// Write implements session.LazyWriter: it appends like Append but leaves
// the data in the page cache (it survives a crash of this process, not of
// the machine) until the next Append or Sync forces it to disk.
func (s *Store) Write(ctx context.Context, h session.Header, events []session.Event) error {
	return s.append(ctx, h, events, false)
}

// Sync implements session.LazyWriter: it forces earlier Writes of the
// session to disk.
func (s *Store) Sync(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e, err := s.lockEntry(id)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	return s.syncEntry(e, false)
}

// syncEntry makes an entry's lazily written file and directories durable;
// fileSynced says the file itself was just fsynced.
func (s *Store) syncEntry(e *entry, fileSynced bool) error {
	if !e.lazy || e.path == "" {
		return nil
	}
	if !fileSynced {
		if err := syncFile(e.path); err != nil {
			return err
		}
	}
	if e.dirs != nil {
		err := <-e.dirs
		e.dirs = nil
		if err != nil {
			return err
		}
	}
	e.lazy = false
	return nil
}

func (s *Store) append(ctx context.Context, h session.Header, events []session.Event, durable bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name, err := EncodeID(h.ID)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", h.ID, err)
	}
	if len(events) == 0 {
		return nil
	}
	e, err := s.lockEntry(h.ID)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	if e.path == "" && e.planned == "" {
		path, err := s.find(name)
		if err != nil {
			return fmt.Errorf("append to session %q: %w", h.ID, err)
		}
		if path != "" {
			// Stored by an earlier process (or released) and not loaded
			// here: own it, then recover the next seq (dropping a torn
			// tail) without crash repair.
			if err := s.own(e, h.ID, path); err != nil {
				return err
			}
			_, evs, err := readLog(path, h.ID)
			if err != nil {
				return fmt.Errorf("append to session %q: %w", h.ID, err)
			}
			e.path, e.next, e.titled = path, len(evs), session.FirstTitle(evs) != ""
		}
	}
	if err := checkSeqs(h.ID, e.next, events); err != nil {
		return err
	}
	body, err := encodeEvents(events)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", h.ID, err)
	}
	if e.path == "" {
		if h.Version != session.FormatVersion {
			return fmt.Errorf("append to session %q: header version %d, want %d", h.ID, h.Version, session.FormatVersion)
		}
		header, err := h.MarshalJSON()
		if err != nil {
			return fmt.Errorf("append to session %q: %w", h.ID, err)
		}
		path := filepath.Join(s.root, Bucket(h.Cwd), name+fileExt)
		// The lock is taken before the file appears, so no other process
		// can load the session before this one owns it.
		if e.planned != "" {
			// Bucket and lock are ready (Prepare made the bucket without
			// an fsync of the root: a durable write makes it durable).
			path = e.planned
			if durable {
				if err := syncDir(s.root); err != nil {
					return fmt.Errorf("append to session %q: %w", h.ID, err)
				}
			}
		} else if err := ensureDir(s.root, filepath.Dir(path), durable); err != nil {
			return fmt.Errorf("append to session %q: %w", h.ID, err)
		}
		if err := s.own(e, h.ID, path); err != nil {
			return err
		}
		if err := materialize(s.root, path, header, body, durable); err != nil {
			return fmt.Errorf("append to session %q: %w", h.ID, err)
		}
		e.path, e.planned, e.titled = path, "", false
		e.lazy = !durable
		if !durable {
			// Make the new directory entries durable in the background,
			// while the turn goes on; the next durable write waits for it.
			e.dirs = make(chan error, 1)
			root := s.root
			go func() {
				err := syncDir(filepath.Dir(path))
				if err == nil {
					err = syncDir(root)
				}
				e.dirs <- err
			}()
		}
	} else {
		if err := appendDurable(e.path, body, durable); err != nil {
			return fmt.Errorf("append to session %q: %w", h.ID, err)
		}
		if !durable {
			e.lazy = true
		}
	}
	e.next += len(events)
	s.noteWrite(e, h, events)
	if durable {
		return s.syncEntry(e, true)
	}
	return nil
}

// checkSeqs verifies that events continue a log whose next seq is next.
func checkSeqs(id string, next int, events []session.Event) error {
	for i, ev := range events {
		if ev.Seq != next+i {
			return fmt.Errorf("append seq mismatch for %q: expected %d at index %d, got %d", id, next+i, i, ev.Seq)
		}
	}
	return nil
}

// Load returns the stored session id, repaired (contract § 6): a torn tail
// after the last turn/end is truncated away and an open turn is closed by
// session.RepairClosers, whose events are appended durably first.
func (s *Store) Load(ctx context.Context, id string) (session.Header, []session.Event, error) {
	if err := ctx.Err(); err != nil {
		return session.Header{}, nil, err
	}
	name, err := EncodeID(id)
	if err != nil {
		return session.Header{}, nil, fmt.Errorf("load session %q: %w", id, err)
	}
	e, err := s.lockEntry(id)
	if err != nil {
		return session.Header{}, nil, err
	}
	defer e.mu.Unlock()
	path := e.path
	if path == "" {
		if path, err = s.find(name); err != nil {
			return session.Header{}, nil, fmt.Errorf("load session %q: %w", id, err)
		}
		if path == "" {
			return session.Header{}, nil, &NotFoundError{ID: id}
		}
	}
	// Own the session before reading it: a session another process holds
	// is neither read nor repaired here.
	if err := s.own(e, id, path); err != nil {
		return session.Header{}, nil, err
	}
	h, events, err := readLog(path, id)
	if errors.Is(err, fs.ErrNotExist) {
		_ = s.releaseEntry(e)
		return session.Header{}, nil, &NotFoundError{ID: id}
	}
	if err != nil {
		var ce *corruptError
		var sce *session.CorruptError
		if errors.As(err, &ce) || errors.As(err, &sce) {
			return session.Header{}, nil, err // contract text, unprefixed
		}
		return session.Header{}, nil, fmt.Errorf("load session %q: %w", id, err)
	}
	e.path, e.next, e.titled = path, len(events), session.FirstTitle(events) != ""
	if closers := session.RepairClosers(events); len(closers) > 0 {
		body, err := encodeEvents(closers)
		if err != nil {
			return session.Header{}, nil, fmt.Errorf("load session %q: repair: %w", id, err)
		}
		if err := appendDurable(path, body, true); err != nil {
			return session.Header{}, nil, fmt.Errorf("load session %q: repair: %w", id, err)
		}
		events = append(events, closers...)
		e.next = len(events)
		s.noteWrite(e, h, closers)
	}
	return h, events, nil
}

// find returns the path of the stored file named name+".jsonl" in any
// bucket, or "" if there is none.
func (s *Store) find(name string) (string, error) {
	buckets, err := os.ReadDir(s.root)
	if err != nil {
		return "", err
	}
	for _, b := range buckets {
		if !b.IsDir() {
			continue
		}
		p := filepath.Join(s.root, b.Name(), name+fileExt)
		st, err := os.Stat(p)
		if err == nil && st.Mode().IsRegular() {
			return p, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return "", nil
}

// List returns the headers of all stored sessions, reading only the first
// line of every *.jsonl file of every bucket, sorted by creation time then
// id. Files whose first line is not a valid header are skipped.
func (s *Store) List(ctx context.Context) ([]session.Header, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	buckets, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var out []session.Header
	for _, b := range buckets {
		if !b.IsDir() {
			continue
		}
		dir := filepath.Join(s.root, b.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		for _, f := range files {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if f.IsDir() || !strings.HasSuffix(f.Name(), fileExt) {
				continue
			}
			h, err := readHeader(filepath.Join(dir, f.Name()))
			if err != nil {
				var ce *corruptError
				if errors.Is(err, fs.ErrNotExist) || errors.As(err, &ce) {
					continue
				}
				return nil, fmt.Errorf("list sessions: %w", err)
			}
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// NotFoundError is returned by Load for an id that is not stored. Its text
// is `session "<id>" not found`; it wraps session.ErrNotFound.
type NotFoundError struct {
	ID string
}

// Error returns `session "<id>" not found`.
func (e *NotFoundError) Error() string { return fmt.Sprintf("session %q not found", e.ID) }

// Unwrap returns session.ErrNotFound.
func (e *NotFoundError) Unwrap() error { return session.ErrNotFound }
