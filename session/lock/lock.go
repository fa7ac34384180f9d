// Package lock is the advisory lock the session stores use to give a stored
// session one owner at a time (session.Owner): an exclusive flock(2) on a
// small file per session, taken without waiting (gofrs/flock: flock(2) on
// Unix, LockFileEx on Windows). The holder writes who it
// is (pid, host, start time) into the file, so a refused process can name
// it. The lock belongs to the open file: it ends with Release, when the
// process exits, or when it crashes (the kernel closes the file); the file
// itself stays, and the next holder overwrites its contents. Two opens in
// one process conflict like two processes do. Lock files are opened
// close-on-exec (not inheritable on Windows), so commands a session runs
// never inherit a lock. On Windows the lock is a byte-range lock on the
// file's first byte, which nobody else may read while it is held; the
// holder is recorded after it ([holderAt]).
package lock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/dsh-acp/dsh-acp/session"
)

// File is a held session lock.
type File struct {
	l    *flock.Flock
	path string
}

// Path returns the lock file's path.
func (l *File) Path() string { return l.path }

// Acquire takes the lock at path for session id, creating the file (mode
// 0600) and its directory (0700) when missing. It does not wait: when
// another open file holds the lock it returns a *session.HeldError naming
// that holder as far as it recorded itself.
func Acquire(path, id string) (*File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock session %q: %w", id, err)
	}
	l := flock.New(path, flock.SetFlag(os.O_RDWR|os.O_CREATE), flock.SetPermissions(0o600))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock session %q: %w", id, err)
	}
	if !ok {
		return nil, &session.HeldError{ID: id, Holder: ReadHolder(path)}
	}
	if err := record(path); err != nil {
		_ = l.Unlock()
		return nil, fmt.Errorf("lock session %q: %w", id, err)
	}
	return &File{l: l, path: path}, nil
}

// Release gives the lock up. The file stays (removing it would let a
// process that opened it before the removal lock a file nobody else sees).
func (l *File) Release() error {
	if l == nil || l.l == nil {
		return nil
	}
	err := l.l.Unlock() // unlocks and closes the locked file
	l.l = nil
	return err
}

// ReadHolder reads the holder recorded in a lock file; the zero Holder
// when there is none or it cannot be read (a holder between taking the lock
// and recording itself).
func ReadHolder(path string) session.Holder {
	f, err := os.Open(path)
	if err != nil {
		return session.Holder{}
	}
	defer f.Close()
	b := make([]byte, 4097)
	n, err := f.ReadAt(b, holderAt)
	if (err != nil && !errors.Is(err, io.EOF)) || n > 4096 {
		return session.Holder{}
	}
	var h session.Holder
	if json.Unmarshal(b[:n], &h) != nil {
		return session.Holder{}
	}
	return h
}

// record writes this process as the holder into the locked file at path,
// from holderAt on, through a second descriptor (the lock's own is
// gofrs/flock's).
func record(path string) error {
	host, _ := os.Hostname()
	b, err := json.Marshal(session.Holder{PID: os.Getpid(), Host: host, Since: time.Now().UnixMilli()})
	if err != nil {
		return err
	}
	b = append(b, '\n')
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, holderAt); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Truncate(holderAt + int64(len(b))); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
