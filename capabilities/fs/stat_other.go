//go:build !unix

package fs

import "os"

// inode returns 0: the platform exposes no inode through os.FileInfo.
func inode(os.FileInfo) uint64 { return 0 }

// owner reports no owner on platforms without POSIX ownership.
func owner(os.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }
