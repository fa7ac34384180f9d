package session

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"
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

// Reader is a Store that reads back what it stored of a session: a Log
// over one keeps the streamed chunks only until they are stored.
type Reader interface {
	// ReadBack returns the first n stored events of session id as they
	// were appended. It changes nothing: no torn tail is cut and no crash
	// repair is done, and the session's ownership stays as it is. Fewer
	// than n stored events is an error.
	ReadBack(ctx context.Context, id string, n int) ([]Event, error)
}

// Titler is a Store that can name a session cheaply (without loading its
// log): the first line of its first user message.
type Titler interface {
	Title(ctx context.Context, id string) (string, error)
}

// TitleOf shortens a user message into a one-line title.
func TitleOf(text string) string {
	line := strings.TrimSpace(text)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	const max = 80
	if utf8.RuneCountInString(line) > max {
		r := []rune(line)
		line = strings.TrimSpace(string(r[:max-1])) + "…"
	}
	return line
}

// FirstTitle is the title (TitleOf) of the first user message in events
// that has text, or "".
func FirstTitle(events []Event) string {
	for _, ev := range events {
		if ev.Type != TypeUserMessage {
			continue
		}
		var m Message
		if ev.Decode(&m) != nil {
			continue
		}
		for _, b := range m.Content {
			if b.Type == BlockText && strings.TrimSpace(b.Text) != "" {
				return TitleOf(b.Text)
			}
		}
	}
	return ""
}
