package capabilities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
)

// TextFiles reaches file contents through a session's host (an editor):
// what it reads is what the user sees, unsaved changes included, and what
// it writes goes through the host (an editor's review). Paths are absolute
// and have passed the agent's own checks. Either method may fail with an
// error wrapping [errors.ErrUnsupported] when the host does not offer it;
// the local file is then used.
type TextFiles interface {
	// Offers reports which of ReadText and WriteText the host serves,
	// without asking it (an editor advertised them at initialize).
	Offers() (read, write bool)
	// ReadText returns the content the host has for path.
	ReadText(ctx context.Context, path string) (string, error)
	// WriteText replaces the content of path.
	WriteText(ctx context.Context, path, content string) error
}

// Through returns the Files that reaches contents through host and
// everything else through local, a confined implementation (localfs):
//
//   - every access first resolves the path through local, so a path local
//     refuses (outside its root, lexically or through a symbolic link, or
//     through a regular file) is refused before the host is asked;
//   - existence, identity (ID) and the file type come from local: a host
//     has no inodes, and a file missing on disk is missing, whatever buffer
//     the host holds for it; the host is not asked about it, so creating a
//     file costs one host round trip, its write;
//   - content comes from the host, and so does Version, "sha256:<hex>" of
//     that content, so a stale-read check compares what the model read
//     with what the user sees now; a file on disk the host cannot read (a
//     binary one) is read, and versioned, from the disk;
//   - Remove is local (hosts have no delete).
//
// A Stat right after a WriteFile of the same path costs no host read while
// the disk shows the state the write left: the version is the hash of the
// content written. Where the host does not offer reads (or writes), local
// serves them; versions then stay local ones.
func Through(local Files, host TextFiles) Files {
	reads, _ := host.Offers()
	return &through{local: local, host: host, hostReads: reads, written: map[string]writtenState{}}
}

// ContentVersion is the Version of content known only by its bytes.
func ContentVersion(content []byte) string {
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}

type through struct {
	local     Files
	host      TextFiles
	hostReads bool // contents are read from the host (else from local)

	mu      sync.Mutex
	written map[string]writtenState // the last write of a path, until its Stat
}

// writtenState is what a WriteFile through the host left: the content's
// version and the disk's state right after it.
type writtenState struct {
	version, disk string
}

// Stat implements Files.
func (t *through) Stat(ctx context.Context, path string) (FileInfo, error) {
	info, err := t.local.Stat(ctx, path)
	if err != nil || !info.Exists || !info.Regular {
		return info, err
	}
	t.mu.Lock()
	w, ok := t.written[path]
	delete(t.written, path)
	t.mu.Unlock()
	if !t.hostReads {
		return info, nil
	}
	if ok && w.disk == info.Version {
		info.Version = w.version
		return info, nil
	}
	text, err := t.host.ReadText(ctx, path)
	if err != nil {
		return info, nil // unsupported, or a file the host cannot read: as on disk
	}
	info.Size, info.Version = int64(len(text)), ContentVersion([]byte(text))
	return info, nil
}

// Open implements Files.
func (t *through) Open(ctx context.Context, path string) (io.ReadCloser, FileInfo, error) {
	info, err := t.local.Stat(ctx, path)
	switch {
	case err != nil:
		return nil, FileInfo{}, err
	case info.Exists && !info.Regular:
		return nil, FileInfo{}, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	if !info.Exists {
		return nil, FileInfo{}, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	if !t.hostReads {
		return t.local.Open(ctx, path)
	}
	text, err := t.host.ReadText(ctx, path)
	switch {
	case err != nil:
		// Unsupported, or a file the host cannot read (a binary one): the
		// disk's, as Stat describes it too.
		return t.local.Open(ctx, path)
	}
	b := []byte(text)
	info.Exists, info.Regular, info.Size, info.Version = true, true, int64(len(b)), ContentVersion(b)
	if info.Mode == 0 {
		info.Mode = 0o644
	}
	return io.NopCloser(bytes.NewReader(b)), info, nil
}

// WriteFile implements Files: the host writes (local, where the host does
// not offer writes), once local has resolved the path; a host write has
// no atomicity or mode guarantees of its own.
func (t *through) WriteFile(ctx context.Context, path string, data []byte) error {
	info, err := t.local.Stat(ctx, path)
	switch {
	case err != nil:
		return err
	case info.Exists && !info.Regular:
		return &fs.PathError{Op: "write", Path: path, Err: ErrNotRegular}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err = t.host.WriteText(ctx, path, string(data))
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		if err := t.local.WriteFile(ctx, path, data); err != nil {
			return err
		}
	case err != nil:
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	after, err := t.local.Stat(ctx, path)
	if err != nil {
		return fmt.Errorf("stat %s after writing it: %w", path, err)
	}
	t.mu.Lock()
	t.written[path] = writtenState{version: ContentVersion(data), disk: after.Version}
	t.mu.Unlock()
	return nil
}

// Remove implements Files.
func (t *through) Remove(ctx context.Context, path string) error {
	return t.local.Remove(ctx, path)
}
