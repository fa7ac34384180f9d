//go:build unix

package bash

// program returns the program to run for name; on Unix PATH decides.
func program(name string) (string, error) { return name, nil }
