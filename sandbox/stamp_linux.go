package sandbox

import (
	"io/fs"
	"syscall"
)

// stampFile is fi's stamp: inode, size, modification and change times.
func stampFile(fi fs.FileInfo) fileStamp {
	s := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino, s.ctime = st.Ino, st.Ctim.Sec*1e9+st.Ctim.Nsec
	}
	return s
}
