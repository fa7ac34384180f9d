package localfs

import (
	"golang.org/x/sys/unix"
)

// dirFlags open a directory only to resolve names beneath it (O_PATH: no
// read permission needed, no side effects).
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC

// openBeneath opens the directory rel beneath root with one openat2: the
// kernel refuses any ".." or symbolic link that leaves root (EXDEV, also
// for absolute links, which the walk then handles), and magic links such
// as /proc/self/root. Unconfined, it resolves like openat.
func openBeneath(root int, rel string, confined bool) (int, error) {
	how := unix.OpenHow{Flags: uint64(dirFlags)}
	if confined {
		how.Resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS
	}
	for {
		fd, err := unix.Openat2(root, rel, &how)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
