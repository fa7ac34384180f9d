//go:build !linux

package sandbox

// SetNonDumpable is a no-op outside Linux.
func SetNonDumpable() error { return nil }

// SetChildSubreaper is a no-op outside Linux.
func SetChildSubreaper() error { return nil }
