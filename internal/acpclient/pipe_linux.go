//go:build linux

package acpclient

import (
	"os"
	"syscall"
)

// blockingPipe returns a close-on-exec pipe whose read end stays in
// blocking mode (one read(2) per Read, no poller round trip).
func blockingPipe() (r, w *os.File, err error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "agent-stdout"), os.NewFile(uintptr(fds[1]), "agent-stdout-w"), nil
}
