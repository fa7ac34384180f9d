package capabilities

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Confined returns the file access confined beneath root: what the file
// tools use (localfs.New, which refuses ".." and symbolic links that lead
// out, at every step). Packages that read files on the agent's own behalf
// (project instructions, skills, prompt commands) take one, so that a file
// a repository supplies is resolved exactly as the read tool would resolve
// it, and a symbolic link out of the workspace never reaches the model.
type Confined func(root string) (Files, error)

// ReadBeneath reads at most limit bytes of the regular file path, which
// must resolve beneath root, through confined (nil: the standard library's
// os.Root, which refuses every absolute symbolic link as well). It returns
// the bytes read and the file's whole size. A path lexically outside root
// is an error wrapping ErrOutsideRoot, as is one a link leads out of it
// through localfs (os.Root reports its own error).
func ReadBeneath(ctx context.Context, confined Confined, root, path string, limit int64) ([]byte, int64, error) {
	root, path = filepath.Clean(root), filepath.Clean(path)
	if path != root && !strings.HasPrefix(path, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator)) {
		return nil, 0, fmt.Errorf("%s: %w", path, ErrOutsideRoot)
	}
	var r io.ReadCloser
	var size int64
	if confined != nil {
		files, err := confined(root)
		if err != nil {
			return nil, 0, err
		}
		rc, info, err := files.Open(ctx, path)
		if err != nil {
			return nil, 0, err
		}
		r, size = rc, info.Size
	} else {
		f, n, err := openInRoot(root, path)
		if err != nil {
			return nil, 0, err
		}
		r, size = f, n
	}
	defer func() { _ = r.Close() }()
	b, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return nil, 0, err
	}
	return b, size, nil
}

// openInRoot opens path beneath root with os.Root: a regular file only.
func openInRoot(root, path string) (*os.File, int64, error) {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return nil, 0, err
	}
	rt, err := os.OpenRoot(root)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = rt.Close() }()
	st, err := rt.Stat(rel) // follows links, beneath root only
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() { // never open a FIFO, which would block
		return nil, 0, fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	f, err := rt.Open(rel)
	if err != nil {
		return nil, 0, err
	}
	st, err = f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		_ = f.Close()
		if err == nil {
			err = fmt.Errorf("%s: %w", path, ErrNotRegular)
		}
		return nil, 0, err
	}
	return f, st.Size(), nil
}
