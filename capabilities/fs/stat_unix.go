//go:build unix

package fs

import (
	"os"
	"syscall"
)

// inode returns the file's inode number (0 when unknown).
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino) //nolint:unconvert // int on some platforms
	}
	return 0
}

// owner returns the file's owning user and group.
func owner(fi os.FileInfo) (uid, gid int, ok bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid), true
	}
	return 0, 0, false
}
