package session

import (
	"context"
	"errors"
)

// Store persists session logs. Implementations: session/jsonl (default) and
// session/sqlite. All pass the suite in session/storetest.
type Store interface {
	// Append persists events, which must continue the stored seq exactly.
	// The first Append for a session materializes it with header h.
	Append(ctx context.Context, h Header, events []Event) error
	// Load returns a stored session, with a torn tail dropped and an open
	// turn closed by crash repair (the closers are persisted too).
	Load(ctx context.Context, id string) (Header, []Event, error)
	// List returns the headers of all stored sessions (no full parse).
	List(ctx context.Context) ([]Header, error)
	// Close releases the store's resources.
	Close() error
}

// ErrNotFound is wrapped by Load when no session has the id.
var ErrNotFound = errors.New("session not found")

// LazyWriter is a Store that can also write without forcing data to disk.
// Lazy writes survive a crash of the process (the kernel has them) but not
// of the machine; the next Append or Sync makes them durable.
type LazyWriter interface {
	// Write appends events like Append, without fsync.
	Write(ctx context.Context, h Header, events []Event) error
	// Sync forces the session's lazy writes to disk.
	Sync(ctx context.Context, id string) error
}
