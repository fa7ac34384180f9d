//go:build linux || darwin

package main

import "golang.org/x/sys/unix"

// echoOff turns the terminal fd's echo off, keeping line editing and
// signals (Ctrl-C still interrupts), and returns what gives it back. It
// is called before the prompt is shown, so nothing typed after the
// prompt — however fast — is echoed.
func echoOff(fd int) (restore func(), err error) {
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, err
	}
	t := *old
	t.Lflag &^= unix.ECHO
	t.Lflag |= unix.ICANON | unix.ISIG
	t.Iflag |= unix.ICRNL
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &t); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, old) }, nil
}
