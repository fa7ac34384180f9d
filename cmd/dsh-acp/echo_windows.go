package main

import "golang.org/x/sys/windows"

// echoOff turns the console fd's echo off, keeping line input and
// Ctrl-C, and returns what gives it back. It is called before the prompt
// is shown, so nothing typed after the prompt is echoed.
func echoOff(fd int) (restore func(), err error) {
	h := windows.Handle(fd)
	var old uint32
	if err := windows.GetConsoleMode(h, &old); err != nil {
		return nil, err
	}
	mode := old&^windows.ENABLE_ECHO_INPUT | windows.ENABLE_LINE_INPUT | windows.ENABLE_PROCESSED_INPUT
	if err := windows.SetConsoleMode(h, mode); err != nil {
		return nil, err
	}
	return func() { _ = windows.SetConsoleMode(h, old) }, nil
}
