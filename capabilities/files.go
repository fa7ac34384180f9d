package capabilities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// Files is the one way tools reach files: read, write, edit and undo go
// through it, never through path-based os calls. Every path crossing it is
// an absolute display path (the model's path resolved against the session
// cwd, "." and ".." collapsed, symbolic links not resolved); the
// implementation decides how it is resolved and may refuse it with an error
// wrapping [ErrOutsideRoot]. A missing file is an error wrapping
// [fs.ErrNotExist]; a path through a regular file, one wrapping
// syscall.ENOTDIR.
//
// The local implementation (capabilities/localfs) resolves paths beneath a
// root through directory file descriptors; [Through] layers an editor's
// fs/read_text_file and fs/write_text_file over it, which have no inodes
// or mtimes, which is why [FileInfo.Version] and [FileInfo.ID] are opaque
// strings.
type Files interface {
	// Stat describes the file path names, following symbolic links. A
	// missing file is not an error: its FileInfo has Exists false and the
	// ID the file would have.
	Stat(ctx context.Context, path string) (FileInfo, error)
	// Open opens the regular file path names for reading and describes it
	// as opened. Anything but a regular file is an error wrapping
	// [ErrNotRegular].
	Open(ctx context.Context, path string) (io.ReadCloser, FileInfo, error)
	// WriteFile replaces the content of path (the target of a symbolic
	// link path names) with data atomically: missing parent directories
	// are created, an existing file's permission bits are kept (0644 for
	// a new file), the data is on stable storage before it becomes
	// visible, and a reader sees the old content or the new one, never a
	// mix. A done ctx stops it before the content becomes visible.
	WriteFile(ctx context.Context, path string, data []byte) error
	// Remove deletes the file path names (a symbolic link itself, not its
	// target).
	Remove(ctx context.Context, path string) error
}

// FileInfo describes one state of a file.
type FileInfo struct {
	// ID identifies the file whatever path names it: two paths reaching the
	// same file through symbolic links share it, and a missing file has the
	// ID it will have once created. It is comparable only with IDs of the
	// same Files implementation.
	ID string
	// Exists reports whether the file exists.
	Exists bool
	// Regular reports whether it is a regular file.
	Regular bool
	// Mode is its type and permission bits.
	Mode fs.FileMode
	// Size is its length in bytes.
	Size int64
	// Version changes whenever the content may have changed (for example
	// "<mtime>:<size>:<inode>", or "sha256:<hex>" where only the content
	// is known); two states with the same Version have the same content.
	Version string
}

// Errors a Files implementation reports (wrapped, typically in an
// *fs.PathError).
var (
	// ErrOutsideRoot refuses a path that leads outside the implementation's
	// root, lexically or through a symbolic link.
	ErrOutsideRoot = errors.New("the path resolves outside the root")
	// ErrNotRegular refuses to open anything but a regular file.
	ErrNotRegular = errors.New("not a regular file")
)

// ReadFile reads the whole regular file path names through files, with its
// description as opened.
func ReadFile(ctx context.Context, files Files, path string) ([]byte, FileInfo, error) {
	r, info, err := files.Open(ctx, path)
	if err != nil {
		return nil, FileInfo{}, err
	}
	var b bytes.Buffer
	if info.Size > 0 {
		b.Grow(int(info.Size) + 1) // +1 so that reading the end needs no growth
	}
	_, err = b.ReadFrom(r)
	if cerr := r.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", path, cerr)
	}
	if err != nil {
		return nil, FileInfo{}, err
	}
	return b.Bytes(), info, nil
}
