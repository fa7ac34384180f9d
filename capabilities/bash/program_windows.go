//go:build windows

package bash

import (
	"os"
	"os/exec"
)

// program returns the program to run for name: "bash" is the bash.exe
// findWindowsBash finds, never what PATH happens to name first (the WSL
// launcher in System32 runs commands in another system).
func program(name string) (string, error) {
	if name != "bash" {
		return name, nil
	}
	return findWindowsBash(winShell{
		getenv:   os.Getenv,
		lookPath: exec.LookPath,
		isFile: func(p string) bool {
			fi, err := os.Stat(p)
			return err == nil && fi.Mode().IsRegular()
		},
	})
}
