//go:build !linux && !windows

package main

import "golang.org/x/sys/unix"

// capMemory caps the data segment at mem (the closest this system has to a
// per-process memory limit; darwin does not enforce RLIMIT_AS).
func capMemory(mem int64) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_DATA, &cur); err != nil {
		return err
	}
	lim := uint64(mem) + 1<<30 // the runtime's own reservations
	if cur.Max < lim {
		lim = cur.Max
	}
	_ = unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: lim, Max: cur.Max})
	return nil
}

// confine does nothing here: on macOS the agent starts the worker under
// Seatbelt with the worker's profile (sandbox.Seatbelt.WorkerProfile: no
// writes, no network, no reads beyond its executable's needs).
func confine() error { return nil }
