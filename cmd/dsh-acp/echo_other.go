//go:build !linux && !darwin && !windows

package main

import "errors"

// echoOff is not available here; readSecret falls back to
// term.ReadPassword.
func echoOff(int) (func(), error) { return nil, errors.ErrUnsupported }
