// Package fs is the file tools family: read, write and edit (tools contract
// §§ 4–8). The three tools of one New call share a per-session fs-policy
// that remembers the version of every file the session has read, written or
// edited, so that write and edit refuse to clobber content the model has not
// seen.
//
// Paths resolve against the calling session's working directory. Every file
// access goes through capabilities.Files. With Options.Confine set (or a
// Gate), a path is reached through an implementation confined beneath the
// workspace root it lies in (the cwd, or one of the session's extra roots,
// capabilities.Host.Roots), which refuses ".." and symbolic links that lead
// out, at every step of every access; without, through an unconfined one.
// When the session's host reaches file contents (an editor's fs/*), the
// confined access reads and writes through it (capabilities.Through), each
// path checked locally first.
package fs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// Options configures one session's file tools.
type Options struct {
	// OnChange, when set, is called after every successful write or edit,
	// once the new content is on disk (an undo journal consumes it).
	OnChange func(ctx context.Context, ch Change)
	// Confine refuses every path that resolves outside the session's working
	// directory, lexically or through a symbolic link (FS_OUTSIDE_ROOT).
	Confine bool
	// Gate, when set, is consulted before every write and edit and before
	// a read outside the session root (see Gate); paths are then judged
	// inside or outside the root as with Confine, whatever Confine says.
	// Without a Gate, Confine alone decides.
	Gate Gate
	// Special, when set with a Gate, says why a path inside a root is
	// special for op (a secret for every op, a file that runs code later
	// for writes and edits), or "": such an access asks the Gate (with
	// Access.Special) although the path is inside. It gets the path with
	// its symbolic links resolved.
	Special func(call *capabilities.Call, op Op, path string) string
	// Confined returns the file access confined beneath a session root
	// (nil: localfs.New).
	Confined func(root string) (capabilities.Files, error)
	// Unconfined reaches any path: it serves every access when neither
	// Confine nor a Gate is set, and the paths outside the root a Gate let
	// through (nil: localfs.Unconfined()).
	Unconfined capabilities.Files
}

// Change describes one file modification made by write or edit.
type Change struct {
	// CallID is the tool call that made the change.
	CallID string
	// Path is the absolute display path (the model's path resolved against
	// the session cwd, symbolic links not resolved).
	Path string
	// Existed reports whether the file existed before the change.
	Existed bool
	// Before is the file's previous content (nil when it did not exist).
	Before []byte
	// After is the content now on disk.
	After []byte
}

// Error codes carried by FsError results (error.code on the tool result).
const (
	CodeNotFound      = "FS_NOT_FOUND"
	CodeNotRegular    = "FS_NOT_REGULAR_FILE"
	CodeNotText       = "FS_NOT_TEXT"
	CodeStaleVersion  = "FS_STALE_VERSION"
	CodeNotObserved   = "FS_NOT_OBSERVED"
	CodeEditNotFound  = "FS_EDIT_NOT_FOUND"
	CodeAmbiguousEdit = "FS_AMBIGUOUS_EDIT"
	CodeAborted       = "FS_ABORTED"
	// CodeOutsideRoot is this project's addition: a path refused by
	// Options.Confine.
	CodeOutsideRoot = "FS_OUTSIDE_ROOT"
)

// ErrorName is the error class name of every coded fs failure.
const ErrorName = "FsError"

// Plain argument-check messages (no error code).
const (
	msgFilePath      = "file_path must be a non-empty string"
	msgOldString     = "old_string must be a non-empty string"
	msgMustDiffer    = "old_string and new_string must differ"
	msgOffset        = "offset must be a positive integer"
	msgLimit         = "limit must be a positive integer"
	msgLimitTooLarge = "limit must be less than or equal to 2000"
)

// New returns fresh read, write and edit tools sharing one fs-policy.
// Construct one set per session: the policy is the session's memory of the
// file versions it has observed.
func New(opts Options) []capabilities.Tool {
	f := &files{opts: opts, policy: newPolicy()}
	return []capabilities.Tool{&readTool{f}, &writeTool{f}, &editTool{f}}
}

// files is the state the three tools of one session share.
type files struct {
	opts   Options
	policy *policy

	mu       sync.Mutex                    // guards the cache of the confined file access
	confined map[string]capabilities.Files // by root
}

// fsError builds the coded error of the FsError class.
func fsError(code, msg string) error {
	return &capabilities.CodedError{Name: ErrorName, Code: code, Message: msg}
}

// quote wraps p in double quotes without escaping, as the upstream messages
// do with template literals.
func quote(p string) string { return `"` + p + `"` }

// ioError turns an unexpected operating-system failure into a plain error
// `<verb> "<p>": <cause>`, dropping the path the os error repeats.
func ioError(verb, display string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("cannot %s %s: %w", verb, quote(display), pe.Err)
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return fmt.Errorf("cannot %s %s: %w", verb, quote(display), le.Err)
	}
	return fmt.Errorf("cannot %s %s: %w", verb, quote(display), err)
}

// aborted reports the FS_ABORTED error for verb when ctx is done.
func aborted(ctx context.Context, verb string) error {
	if ctx.Err() != nil {
		return fsError(CodeAborted, verb+" aborted")
	}
	return nil
}

// cwdOf returns the calling session's working directory.
func cwdOf(call *capabilities.Call) string {
	if call.Session == nil {
		return ""
	}
	return call.Session.Cwd()
}

// checkFilePath applies the shared file_path check.
func checkFilePath(p string) error {
	if strings.TrimSpace(p) == "" {
		return errors.New(msgFilePath)
	}
	return nil
}

// decodeArgs unmarshals validated arguments into v.
func decodeArgs(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

// notify calls the OnChange hook, if any.
func (f *files) notify(ctx context.Context, ch Change) {
	if f.opts.OnChange != nil {
		f.opts.OnChange(ctx, ch)
	}
}
