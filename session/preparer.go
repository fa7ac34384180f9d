package session

import "context"

// Preparer is a Store that can ready itself for a new session's first
// write ahead of it (looking for a stored log with the same id, creating
// directories, taking the ownership lock), so that the first write, which
// sits between the user's first prompt and the first model request, only
// creates the file. Calling it is optional and may run concurrently with
// the session's first Append; a session that is never written leaves
// nothing behind once released.
type Preparer interface {
	Prepare(ctx context.Context, h Header) error
}
