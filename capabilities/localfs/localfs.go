//go:build unix

// Package localfs is the local implementation of capabilities.Files. A
// confined FS ([New]) resolves every path beneath its root through
// directory file descriptors, so a directory swapped for a symbolic link
// between two system calls cannot lead a read or a write outside: on Linux
// with openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS) in the common case,
// otherwise (and for whatever openat2 refuses) by a component-by-component
// walk that opens each directory with O_NOFOLLOW relative to its parent and
// reads symbolic links with readlinkat. Staging files, the final rename and
// the parent's fsync all happen inside the one directory descriptor the
// resolution produced; no path string is resolved twice.
//
// [Unconfined] is the same machinery rooted at "/" with ordinary symbolic
// link semantics, for compositions that do not confine the file tools and
// for accesses outside the root that the user approved.
package localfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// newFileMode is the permission of files WriteFile creates.
const newFileMode = 0o644

// stagePrefix names the staging files WriteFile creates beside the target.
const stagePrefix = ".dsh-stage-"

// keptModeBits are the mode bits an overwrite carries over (permissions,
// setuid, setgid, sticky).
const keptModeBits = 0o7777

// FS is a capabilities.Files on the local filesystem.
type FS struct {
	root     string // absolute and clean, as given
	realRoot string // root with every symbolic link resolved
	confined bool   // refuse everything outside root
	walkOnly bool   // never use openat2 (tests exercise the walk with it)

	noOpenat2 atomic.Bool // set once the kernel reported openat2 missing
}

var _ capabilities.Files = (*FS)(nil)

// New returns an FS confined beneath root (an absolute directory path; it
// may itself be reached through symbolic links). Paths must name root or
// lie lexically beneath it (as given or as its real path), and no ".." or
// symbolic link may lead out: such paths fail with
// capabilities.ErrOutsideRoot. Symbolic links that stay inside work,
// absolute ones included when their target lies beneath root as given or
// beneath its real path.
func New(root string) (*FS, error) {
	root, real, err := resolveRoot(root)
	if err != nil {
		return nil, err
	}
	return &FS{root: root, realRoot: real, confined: true}, nil
}

// Unconfined returns an FS that reaches every path the process can, with
// the usual symbolic link semantics.
func Unconfined() *FS {
	return &FS{root: "/", realRoot: "/"}
}

// Root returns the directory the FS is rooted at, as given to New ("/" for
// Unconfined).
func (f *FS) Root() string { return f.root }

// Stat implements capabilities.Files.
func (f *FS) Stat(ctx context.Context, path string) (capabilities.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return capabilities.FileInfo{}, err
	}
	l, err := f.locate(path, true, false)
	if err != nil {
		return capabilities.FileInfo{}, pathError("stat", path, err)
	}
	defer l.close()
	id, err := l.id()
	if err != nil {
		return capabilities.FileInfo{}, pathError("stat", path, err)
	}
	if l.missing {
		return capabilities.FileInfo{ID: id}, nil
	}
	return info(id, &l.st), nil
}

// Open implements capabilities.Files. The file is opened with O_NOFOLLOW
// and O_NONBLOCK (so a FIFO swapped in cannot block it) and described by
// fstat on the opened descriptor.
func (f *FS) Open(ctx context.Context, path string) (io.ReadCloser, capabilities.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, capabilities.FileInfo{}, err
	}
	l, err := f.locate(path, true, false)
	if err != nil {
		return nil, capabilities.FileInfo{}, pathError("open", path, err)
	}
	defer l.close()
	if l.missing {
		return nil, capabilities.FileInfo{}, pathError("open", path, unix.ENOENT)
	}
	if !isRegular(&l.st) {
		return nil, capabilities.FileInfo{}, pathError("open", path, capabilities.ErrNotRegular)
	}
	id, err := l.id()
	if err != nil {
		return nil, capabilities.FileInfo{}, pathError("open", path, err)
	}
	fd, err := openat(l.dir, l.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, capabilities.FileInfo{}, pathError("open", path, err)
	}
	var st unix.Stat_t
	if err := fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, capabilities.FileInfo{}, pathError("open", path, err)
	}
	if !isRegular(&st) {
		_ = unix.Close(fd)
		return nil, capabilities.FileInfo{}, pathError("open", path, capabilities.ErrNotRegular)
	}
	return os.NewFile(uintptr(fd), path), info(id, &st), nil
}

// WriteFile implements capabilities.Files: missing parents are created
// with mkdirat from descriptors, the content is staged in a new
// ".dsh-stage-*" file beside the target (O_CREAT|O_EXCL|O_NOFOLLOW), given
// the previous file's mode bits (and, best effort, owner), fsynced, renamed
// over the target within the same directory descriptor, and the directory
// is fsynced. A symbolic link as the final component is written through
// when its target exists; a dangling one is replaced.
func (f *FS) WriteFile(ctx context.Context, path string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l, err := f.locate(path, true, true)
	if err != nil {
		return pathError("write", path, err)
	}
	defer l.close()
	if err := l.write(ctx, data); err != nil {
		return pathError("write", path, err)
	}
	return nil
}

// Remove implements capabilities.Files.
func (f *FS) Remove(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l, err := f.locate(path, false, false)
	if err != nil {
		return pathError("remove", path, err)
	}
	defer l.close()
	if l.missing {
		return pathError("remove", path, unix.ENOENT)
	}
	if err := ignoringEINTR(func() error { return unix.Unlinkat(l.dir, l.name, 0) }); err != nil {
		return pathError("remove", path, err)
	}
	return nil
}

// write publishes data as l's entry (see WriteFile).
func (l *loc) write(ctx context.Context, data []byte) (err error) {
	mode, uid, gid := uint32(newFileMode), -1, -1
	if !l.missing {
		mode, uid, gid = uint32(l.st.Mode)&keptModeBits, int(l.st.Uid), int(l.st.Gid) //nolint:unconvert // uint16 on some platforms
	}
	stage, fd, err := createStage(l.dir)
	if err != nil {
		return err
	}
	staged := os.NewFile(uintptr(fd), stage)
	defer func() {
		if staged != nil {
			_ = staged.Close()
		}
		if err != nil {
			_ = unix.Unlinkat(l.dir, stage, 0)
		}
	}()
	if _, err := staged.Write(data); err != nil {
		return err
	}
	if uid >= 0 {
		_ = staged.Chown(uid, gid) // best effort: only privileged callers can give files away
	}
	// After the chown, which may clear setuid and setgid.
	if err := staged.Chmod(fs.FileMode(mode&0o777) | setBits(mode)); err != nil {
		return err
	}
	if err := staged.Sync(); err != nil {
		return err
	}
	err = staged.Close()
	staged = nil
	if err != nil {
		return fmt.Errorf("close staged file: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ignoringEINTR(func() error { return unix.Renameat(l.dir, stage, l.dir, l.name) }); err != nil {
		return err
	}
	syncDir(l.dir)
	return nil
}

// setBits converts the setuid, setgid and sticky bits of a unix mode.
func setBits(mode uint32) fs.FileMode {
	var m fs.FileMode
	if mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// createStage creates a fresh staging file in dir.
func createStage(dir int) (string, int, error) {
	for range 16 {
		name := stagePrefix + strconv.FormatUint(rand.Uint64(), 36)
		fd, err := openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		return name, fd, err
	}
	return "", -1, unix.EEXIST
}

// syncDir flushes dir's entries; failures are ignored (some filesystems
// cannot sync directories, and the rename already happened).
func syncDir(dir int) {
	fd, err := openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_ = unix.Fsync(fd)
	_ = unix.Close(fd)
}

// info describes st.
func info(id string, st *unix.Stat_t) capabilities.FileInfo {
	return capabilities.FileInfo{
		ID:      id,
		Exists:  true,
		Regular: isRegular(st),
		Mode:    fileMode(uint32(st.Mode)), //nolint:unconvert // uint16 on some platforms
		Size:    st.Size,
		Version: strconv.FormatInt(st.Mtim.Nano(), 10) + ":" + strconv.FormatInt(st.Size, 10) + ":" + strconv.FormatUint(uint64(st.Ino), 10), //nolint:unconvert // Ino's type varies
	}
}

func isRegular(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFREG }

func isLink(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }

// fileMode converts a unix mode to an fs.FileMode.
func fileMode(mode uint32) fs.FileMode {
	m := fs.FileMode(mode&0o777) | setBits(mode)
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}

// pathError wraps err with the operation and the display path, unless it
// is a context error.
func pathError(op, path string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// rel turns an absolute display path into a path relative to the root:
// "." for the root itself, capabilities.ErrOutsideRoot when it is not
// lexically beneath the root as given or its real path.
func (f *FS) rel(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("not an absolute path: %w", fs.ErrInvalid)
	}
	p := filepath.Clean(path)
	for _, r := range [2]string{f.root, f.realRoot} {
		switch {
		case p == r:
			return ".", nil
		case r == "/":
			return p[1:], nil
		case strings.HasPrefix(p, r) && p[len(r)] == '/':
			return p[len(r)+1:], nil
		}
	}
	return "", capabilities.ErrOutsideRoot
}
