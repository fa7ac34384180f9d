//go:build windows

package lock

// holderAt is where the holder record starts in a lock file: after the
// first byte, which the held LockFileEx range makes unreadable (and
// unwritable through any other handle).
const holderAt = 1
