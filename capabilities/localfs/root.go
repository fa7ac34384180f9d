package localfs

import (
	"fmt"
	"path/filepath"
)

// resolveRoot checks that root is absolute and returns it cleaned, and
// with every symbolic link resolved: the two forms a confined FS accepts
// paths beneath.
func resolveRoot(root string) (clean, real string, err error) {
	if !filepath.IsAbs(root) {
		return "", "", fmt.Errorf("localfs: root %q is not absolute", root)
	}
	clean = filepath.Clean(root)
	real, err = filepath.EvalSymlinks(clean)
	if err != nil {
		return "", "", fmt.Errorf("localfs: resolve root: %w", err)
	}
	return clean, real, nil
}
