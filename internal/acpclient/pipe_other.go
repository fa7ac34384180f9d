//go:build !linux

package acpclient

import "os"

// blockingPipe returns a close-on-exec pipe; outside Linux the standard
// library's (pipe2 is Linux's).
func blockingPipe() (r, w *os.File, err error) { return os.Pipe() }
