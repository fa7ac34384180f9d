//go:build unix && !linux

package localfs

import "golang.org/x/sys/unix"

// dirFlags open a directory to resolve names beneath it.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC

// openBeneath reports ENOSYS: without openat2 every resolution walks.
func openBeneath(int, string, bool) (int, error) { return -1, unix.ENOSYS }
