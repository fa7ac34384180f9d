// Package sqlite is the alternative session store (session-log contract § 7):
// one SQLite database (pure Go, modernc.org/sqlite) holding a sessions table
// and an events table, schema version 4.
//
// Every append batch is one BEGIN IMMEDIATE transaction that checks seq
// continuity; Load applies the same torn-tail and crash-repair rules as the
// JSONL store, persisting the closers in the same transaction.
//
// The contract schema has no column for the envelope key order of the
// crash-repair tool/result (surfaceOp before sourceEventSeqs,
// session.Event.SurfaceOpFirst). The store keeps it in the formatting of the
// source_event_seqs JSON text: such an event's array is written with one
// leading space (` [12]`), which is still the same JSON value for any reader,
// so rows map back to an identical Event without a schema change.
//
// One owner per session (session.Owner): Load and the first Append of a
// session take an exclusive flock on `<database>.locks/<hash of id>.lock`
// (package session/lock) and keep it until Release or Close, so a process
// never commits to a session another process has loaded.
package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/dsh-acp/dsh-acp/session"
	"github.com/dsh-acp/dsh-acp/session/lock"
)

// SchemaVersion is the PRAGMA user_version of the schema this build writes.
const SchemaVersion = 4

// Journal modes accepted by WithJournalMode.
const (
	JournalWAL      = "WAL"
	JournalDelete   = "DELETE"
	JournalTruncate = "TRUNCATE"
	JournalPersist  = "PERSIST"
)

// DefaultBusyTimeout is how long a connection waits for a lock held by
// another connection or process before failing with SQLITE_BUSY.
const DefaultBusyTimeout = 5 * time.Second

var schema = []string{
	`CREATE TABLE IF NOT EXISTS sessions(id TEXT PRIMARY KEY, version INTEGER NOT NULL, created_at INTEGER NOT NULL,
         cwd TEXT, parent_session TEXT, seed_length INTEGER) STRICT`,
	`CREATE TABLE IF NOT EXISTS events(session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
       seq INTEGER NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL,
       data TEXT NOT NULL, source_event_seqs TEXT, surface_op TEXT,
       PRIMARY KEY (session_id, seq)) STRICT`,
}

// Option configures Open.
type Option func(*config)

type config struct {
	journalMode string
	busyTimeout time.Duration
}

// WithJournalMode sets PRAGMA journal_mode: WAL (the default), DELETE,
// TRUNCATE or PERSIST (case-insensitive).
func WithJournalMode(mode string) Option {
	return func(c *config) { c.journalMode = strings.ToUpper(mode) }
}

// WithBusyTimeout sets PRAGMA busy_timeout (default DefaultBusyTimeout).
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) { c.busyTimeout = d }
}

// Store is a session.Store over one SQLite database file. It is safe for
// concurrent use, also by several processes sharing the file; each session
// is written only by the Store that holds its lock.
type Store struct {
	db    *sql.DB
	path  string
	locks string // the directory of the session lock files

	mu   sync.Mutex
	held map[string]*lock.File // sessions this store owns
}

var (
	_ session.Store = (*Store)(nil)
	_ session.Owner = (*Store)(nil)
)

// Open opens (creating if needed) the database at path, applies the
// connection pragmas (busy_timeout, foreign_keys = ON, journal_mode) and
// creates the schema in a fresh database. A database whose user_version is
// neither 0 nor SchemaVersion is refused.
func Open(path string, opts ...Option) (*Store, error) {
	cfg := config{journalMode: JournalWAL, busyTimeout: DefaultBusyTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	switch cfg.journalMode {
	case JournalWAL, JournalDelete, JournalTruncate, JournalPersist:
	default:
		return nil, fmt.Errorf("open session database: unsupported journal mode %q", cfg.journalMode)
	}
	if path == "" {
		return nil, errors.New("open session database: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open session database: %w", err)
	}
	if err := private(abs); err != nil {
		return nil, fmt.Errorf("open session database: %w", err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(cfg.busyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode("+cfg.journalMode+")")
	q.Set("_txlock", "immediate")
	dsn := "file:" + escapePath(abs) + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open session database: %w", err)
	}
	s := &Store{db: db, path: path, locks: abs + ".locks", held: map[string]*lock.File{}}
	if err := s.init(context.Background(), cfg); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// fileMode is the permission of the database and its -wal, -shm and
// -journal files: they hold every conversation, so only the user reads
// them (SQLite gives the side files the database's own mode).
const fileMode = 0o600

// sideFiles are the suffixes of the files SQLite keeps beside a database.
var sideFiles = [...]string{"", "-wal", "-shm", "-journal"}

// private creates the database file at path with fileMode before SQLite
// opens it (SQLite would create it 0644 less the umask), and takes group
// and other access away from an existing database and its side files.
func private(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, suffix := range sideFiles {
		fi, err := os.Lstat(path + suffix)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(path+suffix, fi.Mode().Perm()&^0o077); err != nil {
			return err
		}
	}
	return nil
}

// escapePath makes an absolute file path safe inside a SQLite URI.
func escapePath(p string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")
	return r.Replace(filepath.ToSlash(p))
}

func (s *Store) init(ctx context.Context, cfg config) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("open session database %q: %w", s.path, err)
	}
	if !strings.EqualFold(mode, cfg.journalMode) {
		return fmt.Errorf("open session database %q: journal_mode is %s, want %s", s.path, mode, cfg.journalMode)
	}
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one creator at a time
	if err != nil {
		return fmt.Errorf("open session database %q: %w", s.path, err)
	}
	defer func() { _ = tx.Rollback() }()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("open session database %q: %w", s.path, err)
	}
	switch v {
	case SchemaVersion:
		return nil
	case 0:
	default:
		return fmt.Errorf(`session database at "%s" has schema version %d, incompatible with this build (%d)`, s.path, v, SchemaVersion)
	}
	for _, stmt := range schema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("create session schema: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(SchemaVersion)); err != nil {
		return fmt.Errorf("set schema version: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create session schema: %w", err)
	}
	return nil
}

// Path returns the database path given to Open.
func (s *Store) Path() string { return s.path }

// Close releases the sessions the store holds and closes the database.
func (s *Store) Close() error {
	s.mu.Lock()
	var errs []error
	for id, l := range s.held {
		errs = append(errs, l.Release())
		delete(s.held, id)
	}
	s.mu.Unlock()
	return errors.Join(append(errs, s.db.Close())...)
}

// Release implements session.Owner: it gives up the store's hold on the
// session id. It must not race the session's own writes.
func (s *Store) Release(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.held[id]
	delete(s.held, id)
	return l.Release()
}

// own takes the ownership lock of session id unless the store holds it.
func (s *Store) own(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[id] != nil {
		return nil
	}
	sum := sha256.Sum256([]byte(id))
	l, err := lock.Acquire(filepath.Join(s.locks, hex.EncodeToString(sum[:16])+".lock"), id)
	if err != nil {
		return err
	}
	s.held[id] = l
	return nil
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
