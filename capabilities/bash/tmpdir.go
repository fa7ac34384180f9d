package bash

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// sessionTmp is one session's private temporary directory, which its
// confined commands see as /tmp: created on first use (mode 0700, named
// dsh-acp-tmp-<random>) beneath a base directory, and removed when the
// session ends.
type sessionTmp struct {
	base string

	mu     sync.Mutex
	dir    string
	closed bool
}

// errSessionClosed is the error of a temp dir asked for after Close.
var errSessionClosed = errors.New("the session is closed")

// path returns the directory, creating it on the first call.
func (s *sessionTmp) path() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", fmt.Errorf("session temp dir: %w", errSessionClosed)
	}
	if s.dir != "" {
		return s.dir, nil
	}
	base := s.base
	if base == "" {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, "dsh-acp-tmp-")
	if err != nil {
		return "", fmt.Errorf("session temp dir: %w", err)
	}
	s.dir = dir
	return dir, nil
}

// remove deletes the directory and everything in it; later calls to path
// fail.
func (s *sessionTmp) remove() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.dir == "" {
		return nil
	}
	dir := s.dir
	s.dir = ""
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove session temp dir: %w", err)
	}
	return nil
}
