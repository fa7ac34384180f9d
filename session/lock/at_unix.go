//go:build !windows

package lock

// holderAt is where the holder record starts in a lock file: at its
// beginning, since flock(2) locks no bytes.
const holderAt = 0
