//go:build !linux && !darwin

package sandbox

import "io/fs"

// stampFile is fi's stamp: size and modification time (the system gives
// no inode or change time through fs.FileInfo, so the tripwire reads a
// file whose stamp is unchanged again when it was recorded racy only).
func stampFile(fi fs.FileInfo) fileStamp {
	return fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
