package credentials

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// readFile returns the key in the fallback file ("" when there is none).
// On systems with Unix permissions a file that group or others may read
// is refused: the key may have leaked, and using it would hide that.
func (s *Store) readFile() (string, error) {
	path := s.Path()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the stored key: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read the stored key: %w", err)
	}
	if err := privateMode(runtime.GOOS, info.Mode()); err != nil {
		return "", fmt.Errorf("the stored key %s %w: run chmod 600 %s, or dsh-acp --login again", path, err, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("read the stored key: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// privateMode refuses a key file others can read (not on Windows, whose
// files carry ACLs instead: the file lives in the user's own profile).
func privateMode(goos string, mode os.FileMode) error {
	if goos == "windows" || mode.Perm()&0o077 == 0 {
		return nil
	}
	return fmt.Errorf("is readable by others (mode %04o)", mode.Perm())
}

// writeFile replaces path with key, mode 0600, in a directory of mode
// 0700: a temporary file beside it, synced, then renamed over it, so a
// crash leaves the old key or the new one, never half of one.
func writeFile(dir, path, key string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("store the key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("store the key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return fmt.Errorf("store the key: %w", err)
	}
	if _, err := tmp.WriteString(key + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("store the key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("store the key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("store the key: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("store the key: %w", err)
	}
	return nil
}
