package session

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Owner is a Store that gives every stored session one owner at a time,
// across processes: Load and the first Append of a session take the
// session's advisory lock for the store, and the store keeps it until
// Release, Close or the end of the process (the kernel drops the lock of a
// crashed holder). While another store holds a session, Load and Append
// fail with a *HeldError and change nothing of it.
type Owner interface {
	// Release gives up the store's hold on a session (a no-op when it
	// holds none). A later Load or Append takes the lock again and
	// re-reads the stored state.
	Release(id string) error
}

// ErrHeld is wrapped by the errors of a Load or Append refused because
// another owner holds the session.
var ErrHeld = errors.New("session is held by another owner")

// Holder describes the owner of a session lock as it recorded itself.
// Fields it did not record (or that could not be read) are zero.
type Holder struct {
	// PID is the holder's process id.
	PID int `json:"pid"`
	// Host is the holder's host name.
	Host string `json:"host,omitempty"`
	// Since is when the holder took the lock, in epoch milliseconds.
	Since int64 `json:"since,omitempty"`
}

// String describes the holder for error messages: "pid 42 on host h
// since 2026-01-02T15:04:05Z", or "" when nothing is known.
func (h Holder) String() string {
	var parts []string
	if h.PID > 0 {
		parts = append(parts, fmt.Sprintf("pid %d", h.PID))
	}
	if h.Host != "" {
		parts = append(parts, "on host "+h.Host)
	}
	if h.Since > 0 {
		parts = append(parts, "since "+time.UnixMilli(h.Since).UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, " ")
}

// HeldError is a Load or Append refused because another owner (usually
// another dsh-acp process) holds the session. It wraps ErrHeld.
type HeldError struct {
	// ID is the session id.
	ID string
	// Holder is the owner as it recorded itself (zero when unknown).
	Holder Holder
}

// Error names the session and its holder.
func (e *HeldError) Error() string {
	who := "another process"
	if s := e.Holder.String(); s != "" {
		who += " (" + s + ")"
	}
	return fmt.Sprintf("session %q is open in %s", e.ID, who)
}

// Unwrap returns ErrHeld.
func (e *HeldError) Unwrap() error { return ErrHeld }
