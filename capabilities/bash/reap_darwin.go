//go:build unix && !linux

package bash

import "time"

// tracker does nothing outside Linux: there is no /proc to find what a
// command left behind in its session once the command itself ended (a
// command that is still running is ended with its whole process group; see
// process.doTerminate).
type tracker struct{}

func (*tracker) add(*process) {}
func (*tracker) sweepAll()    {}

func sweepSession(int) {}

func endNamespaces(int, time.Duration) {}
