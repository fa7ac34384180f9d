//go:build windows

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

	"golang.org/x/sys/windows"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// stagePrefix names the staging files WriteFile creates beside the target.
const stagePrefix = ".dsh-stage-"

// FS is a capabilities.Files on the local filesystem. On Windows a
// confined FS resolves every path through the standard library's os.Root
// opened at its root, which refuses names (".." or a symbolic link, a
// junction or another reparse point) that would lead outside it, and
// opens Windows' reserved device names (NUL, COM1…) nowhere. What os.Root
// documents it cannot stop, it does not stop here either: a path that a
// concurrent rename moves out of the root between two calls of one
// operation is not followed out, but hard links made beforehand reach
// what they link.
type FS struct {
	root     string // absolute and clean, as given
	realRoot string // root with every symbolic link resolved
	confined bool
}

var _ capabilities.Files = (*FS)(nil)

// New returns an FS confined beneath root (an absolute directory path).
// Paths must name root or lie beneath it, as given or as its real path,
// compared without regard to case; others fail with
// capabilities.ErrOutsideRoot.
func New(root string) (*FS, error) {
	root, real, err := resolveRoot(root)
	if err != nil {
		return nil, err
	}
	return &FS{root: root, realRoot: real, confined: true}, nil
}

// Unconfined returns an FS that reaches every path the process can.
func Unconfined() *FS { return &FS{} }

// Root returns the directory the FS is rooted at, as given to New (""
// for Unconfined).
func (f *FS) Root() string { return f.root }

// open returns the os.Root the path resolves beneath and the name in it.
func (f *FS) open(path string) (*os.Root, string, error) {
	if !filepath.IsAbs(path) {
		return nil, "", fmt.Errorf("not an absolute path: %w", fs.ErrInvalid)
	}
	if !f.confined {
		p := filepath.Clean(path)
		vol := filepath.VolumeName(p)
		r, err := os.OpenRoot(vol + `\`)
		if err != nil {
			return nil, "", err
		}
		rel := strings.TrimPrefix(p[len(vol):], `\`)
		if rel == "" {
			rel = "."
		}
		// Unconfined follows links anywhere: resolve them first, so
		// that os.Root's refusal to leave the volume root never bites.
		if real, err := filepath.EvalSymlinks(p); err == nil && strings.EqualFold(filepath.VolumeName(real), vol) {
			rel = strings.TrimPrefix(real[len(vol):], `\`)
			if rel == "" {
				rel = "."
			}
		}
		return r, rel, nil
	}
	rel, err := winRel(path, f.root, f.realRoot)
	if err != nil {
		return nil, "", err
	}
	r, err := os.OpenRoot(f.root)
	if err != nil {
		return nil, "", err
	}
	return r, rel, nil
}

// Stat implements capabilities.Files.
func (f *FS) Stat(ctx context.Context, path string) (capabilities.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return capabilities.FileInfo{}, err
	}
	r, rel, err := f.open(path)
	if err != nil {
		return capabilities.FileInfo{}, pathError("stat", path, err)
	}
	defer r.Close()
	fi, err := r.Stat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		id, err := missingID(r, rel)
		if err != nil {
			return capabilities.FileInfo{}, pathError("stat", path, err)
		}
		return capabilities.FileInfo{ID: id}, nil
	}
	if err != nil {
		return capabilities.FileInfo{}, pathError("stat", path, err)
	}
	file, err := r.Open(rel)
	if err != nil {
		return capabilities.FileInfo{}, pathError("stat", path, err)
	}
	defer file.Close()
	id, err := fileID(file)
	if err != nil {
		return capabilities.FileInfo{}, pathError("stat", path, err)
	}
	return info(id, fi), nil
}

// Open implements capabilities.Files.
func (f *FS) Open(ctx context.Context, path string) (io.ReadCloser, capabilities.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, capabilities.FileInfo{}, err
	}
	r, rel, err := f.open(path)
	if err != nil {
		return nil, capabilities.FileInfo{}, pathError("open", path, err)
	}
	defer r.Close()
	file, err := r.Open(rel)
	if err != nil {
		return nil, capabilities.FileInfo{}, pathError("open", path, err)
	}
	fi, err := file.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = capabilities.ErrNotRegular
	}
	var id string
	if err == nil {
		id, err = fileID(file)
	}
	if err != nil {
		_ = file.Close()
		return nil, capabilities.FileInfo{}, pathError("open", path, err)
	}
	return file, info(id, fi), nil
}

// WriteFile implements capabilities.Files: missing parents are created
// beneath the root, the content is staged in a new ".dsh-stage-*" file
// beside the target, flushed, and renamed over the target.
func (f *FS) WriteFile(ctx context.Context, path string, data []byte) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, rel, err := f.open(path)
	if err != nil {
		return pathError("write", path, err)
	}
	defer r.Close()
	if rel == "." {
		return pathError("write", path, capabilities.ErrNotRegular)
	}
	dir := filepath.Dir(rel)
	if err := r.MkdirAll(dir, 0o777); err != nil {
		return pathError("write", path, err)
	}
	var stage string
	var file *os.File
	for range 16 {
		stage = filepath.Join(dir, stagePrefix+strconv.FormatUint(rand.Uint64(), 36))
		file, err = r.OpenFile(stage, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return pathError("write", path, err)
	}
	defer func() {
		if file != nil {
			_ = file.Close()
		}
		if err != nil {
			_ = r.Remove(stage)
		}
	}()
	if _, err = file.Write(data); err != nil {
		return pathError("write", path, err)
	}
	if err = file.Sync(); err != nil {
		return pathError("write", path, err)
	}
	err = file.Close()
	file = nil
	if err != nil {
		return pathError("write", path, err)
	}
	if err = ctx.Err(); err != nil {
		return err
	}
	if err = r.Rename(stage, rel); err != nil {
		return pathError("write", path, err)
	}
	return nil
}

// Remove implements capabilities.Files.
func (f *FS) Remove(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, rel, err := f.open(path)
	if err != nil {
		return pathError("remove", path, err)
	}
	defer r.Close()
	if err := r.Remove(rel); err != nil {
		return pathError("remove", path, err)
	}
	return nil
}

// fileID is an open file's identity: its volume serial number and file
// index, which every name of the file shares.
func fileID(f *os.File) (string, error) {
	var d windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &d); err != nil {
		return "", err
	}
	idx := uint64(d.FileIndexHigh)<<32 | uint64(d.FileIndexLow)
	return strconv.FormatUint(uint64(d.VolumeSerialNumber), 10) + ":" + strconv.FormatUint(idx, 10), nil
}

// missingID is the identity a missing file will have: its nearest
// existing ancestor's identity plus the rest of the name, lower-cased
// (Windows names are case-insensitive).
func missingID(r *os.Root, rel string) (string, error) {
	dir, rest := rel, ""
	for {
		parent := filepath.Dir(dir)
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
		d, err := r.Open(dir)
		if err == nil {
			defer d.Close()
			id, err := fileID(d)
			if err != nil {
				return "", err
			}
			return id + "/" + strings.ToLower(filepath.ToSlash(filepath.Clean(rest))), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || dir == "." {
			return "", err
		}
	}
}

// info describes fi.
func info(id string, fi fs.FileInfo) capabilities.FileInfo {
	return capabilities.FileInfo{
		ID:      id,
		Exists:  true,
		Regular: fi.Mode().IsRegular(),
		Mode:    fi.Mode(),
		Size:    fi.Size(),
		Version: strconv.FormatInt(fi.ModTime().UnixNano(), 10) + ":" + strconv.FormatInt(fi.Size(), 10) + ":" + id,
	}
}

// pathError wraps err with the operation and the display path, unless it
// is a context error.
func pathError(op, path string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// os.Root refuses an escape with an unexported error ("path escapes
	// from parent"); callers test for capabilities.ErrOutsideRoot.
	if !errors.Is(err, capabilities.ErrOutsideRoot) && strings.Contains(err.Error(), "path escapes from parent") {
		err = fmt.Errorf("%w: %w", capabilities.ErrOutsideRoot, err)
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}
