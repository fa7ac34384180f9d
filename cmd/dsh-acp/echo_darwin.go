package main

import "golang.org/x/sys/unix"

// The termios requests of echoOff.
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)
