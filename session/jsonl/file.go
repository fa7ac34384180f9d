package jsonl

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// materialize creates path with the header line and body (event lines):
// it writes a uniquely named temp file `<path>.<12 hex>.tmp` opened with
// O_EXCL, hard-links it to path (refusing if path exists) and removes the
// temp file. With durable it fsyncs the file before the link and the
// directories after it.
func materialize(root, path string, header, body []byte, durable bool) (err error) {
	dir := filepath.Dir(path)
	if err := ensureDir(root, dir, durable); err != nil {
		return err
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("temp name: %w", err)
	}
	tmp := path + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create temp log: %w", err)
	}
	defer func() {
		if rmErr := os.Remove(tmp); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("remove temp log: %w", rmErr)
		}
	}()
	buf := make([]byte, 0, len(header)+1+len(body))
	buf = append(append(append(buf, header...), '\n'), body...)
	if _, err := f.Write(buf); err != nil {
		_ = f.Close()
		return fmt.Errorf("write temp log: %w", err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return fmt.Errorf("sync temp log: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close temp log: %w", err)
	}
	if err := os.Link(tmp, path); err != nil {
		return fmt.Errorf("publish session log: %w", err)
	}
	if durable {
		return syncDir(dir)
	}
	return nil
}

// ensureDir creates the bucket directory dir (mode 0700) if missing and,
// with durable, fsyncs root so the new directory entry is durable.
func ensureDir(root, dir string, durable bool) error {
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create bucket: %w", err)
	}
	if !durable {
		return nil
	}
	return syncDir(root)
}

// syncDir fsyncs a directory so entries created in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// appendDurable appends body to path and, with durable, fsyncs it (which
// also makes earlier lazy appends durable). When the write or the fsync
// fails the file is truncated back to its previous size.
func appendDurable(path string, body []byte, durable bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("open session log: %w", err)
	}
	if err := appendTo(f, body, durable); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close session log: %w", err)
	}
	return nil
}

// appendFile is the part of *os.File appendTo uses.
type appendFile interface {
	Stat() (os.FileInfo, error)
	Write([]byte) (int, error)
	Sync() error
	Truncate(int64) error
}

// appendTo writes body at the end of f (opened with O_APPEND) and, with
// durable, fsyncs; on failure it truncates f back to its previous size.
func appendTo(f appendFile, body []byte, durable bool) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat session log: %w", err)
	}
	size := st.Size()
	_, err = f.Write(body)
	if err == nil && durable {
		err = f.Sync()
	}
	if err == nil {
		return nil
	}
	werr := fmt.Errorf("append session log: %w", err)
	if terr := f.Truncate(size); terr != nil {
		return errors.Join(werr, fmt.Errorf("truncate back to %d: %w", size, terr))
	}
	if serr := f.Sync(); serr != nil {
		return errors.Join(werr, fmt.Errorf("sync truncation: %w", serr))
	}
	return werr
}

// truncateDurable cuts path to size bytes, appends a newline when addNewline
// is set (an unterminated but valid header line), and fsyncs the file.
func truncateDurable(path string, size int64, addNewline bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open session log: %w", err)
	}
	err = f.Truncate(size)
	if err == nil && addNewline {
		_, err = f.WriteAt([]byte{'\n'}, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("truncate torn tail: %w", err)
	}
	return nil
}

// syncFile fsyncs path.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("sync session log: %w", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync session log: %w", err)
	}
	return nil
}
