package fs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// newFileMode is the permission of files write creates.
const newFileMode fs.FileMode = 0o644

// stagePattern names the private staging directories.
const stagePattern = ".dsh-stage-*"

// keptModeBits are the mode bits an overwrite carries over.
const keptModeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// writeAtomic publishes data at path in one rename: it creates missing
// parent directories, stages the content in a private (0700) directory
// beside the target (the same filesystem, so the rename is atomic), syncs
// it, gives it the mode (and, best effort, the owner) of prev when the file
// existed, renames it over the target and syncs the directory. A reader
// sees the old content or the new one, never a mix.
func writeAtomic(ctx context.Context, path string, data []byte, prev os.FileInfo, display string) (err error) {
	if err := aborted(ctx, "write"); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return ioError("write", display, err)
	}
	stage, err := os.MkdirTemp(dir, stagePattern)
	if err != nil {
		return ioError("write", display, err)
	}
	defer func() {
		if rmErr := os.RemoveAll(stage); rmErr != nil && err == nil {
			err = ioError("write", display, rmErr)
		}
	}()
	tmp := filepath.Join(stage, filepath.Base(path))
	if err := writeSynced(tmp, data); err != nil {
		return ioError("write", display, err)
	}
	mode := newFileMode
	if prev != nil {
		mode = prev.Mode() & keptModeBits
		if uid, gid, ok := owner(prev); ok {
			_ = os.Lchown(tmp, uid, gid) // best effort: only privileged callers can give files away
		}
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return ioError("write", display, err)
	}
	if err := aborted(ctx, "write"); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return ioError("write", display, err)
	}
	syncDir(dir)
	return nil
}

// writeSynced creates name exclusively, writes data and flushes it to
// stable storage.
func writeSynced(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Sync(); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close staged file: %w", err)
	}
	return nil
}

// syncDir flushes a directory entry change; failures are ignored (some
// filesystems cannot sync directories, and the rename already happened).
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
