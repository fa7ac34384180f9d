// Package lock is the advisory lock the session stores use to give a stored
// session one owner at a time (session.Owner): an exclusive flock(2) on a
// small file per session, taken without waiting. The holder writes who it
// is (pid, host, start time) into the file, so a refused process can name
// it. The lock belongs to the open file: it ends with Release, when the
// process exits, or when it crashes (the kernel closes the file); the file
// itself stays, and the next holder overwrites its contents. Two opens in
// one process conflict like two processes do. Lock files are opened
// close-on-exec, so commands a session runs never inherit a lock.
package lock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/session"
)

// File is a held session lock.
type File struct {
	f    *os.File
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
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock session %q: %w", id, err)
	}
	if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &session.HeldError{ID: id, Holder: ReadHolder(path)}
		}
		return nil, fmt.Errorf("lock session %q: %w", id, err)
	}
	if err := record(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock session %q: %w", id, err)
	}
	return &File{f: f, path: path}, nil
}

// Release gives the lock up. The file stays (removing it would let a
// process that opened it before the removal lock a file nobody else sees).
func (l *File) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor drops the flock
	l.f = nil
	return err
}

// ReadHolder reads the holder recorded in a lock file; the zero Holder
// when there is none or it cannot be read (a holder between taking the lock
// and recording itself).
func ReadHolder(path string) session.Holder {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 4096 {
		return session.Holder{}
	}
	var h session.Holder
	if json.Unmarshal(b, &h) != nil {
		return session.Holder{}
	}
	return h
}

// record writes this process as the holder into the locked file.
func record(f *os.File) error {
	host, _ := os.Hostname()
	b, err := json.Marshal(session.Holder{PID: os.Getpid(), Host: host, Since: time.Now().UnixMilli()})
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	return err
}

// flock applies how to f, retrying when a signal interrupts the call.
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), how)
			if !errors.Is(ferr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
