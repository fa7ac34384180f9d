//go:build !linux

package main

// releaseStartupPages is Linux-only.
func releaseStartupPages() error { return nil }
