package lock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-acp/dsh-acp/session"
)

// TestAcquireConflictsAndNamesHolder checks the lock on whatever system
// the test runs: a second open of a held lock is refused with the holder
// this process recorded, and a released lock can be taken again.
func TestAcquireConflictsAndNamesHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "s.lock")
	first, err := Acquire(path, "s")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(path, "s")
	var held *session.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("second Acquire = %v, want a *session.HeldError", err)
	}
	if held.Holder.PID != os.Getpid() {
		t.Fatalf("holder pid = %d, want ours (%d)", held.Holder.PID, os.Getpid())
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Acquire(path, "s")
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	if err := again.Release(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o077 != 0 && os.PathSeparator == '/' {
		t.Fatalf("lock file: %v, %v", fi.Mode(), err)
	}
}
