//go:build windows

package acpclient

import "os"

// signaled reports no signal: Windows processes end with an exit code.
func signaled(*os.ProcessState) (string, bool) { return "", false }

// shellArgv is how a command line without args runs.
func shellArgv() []string { return []string{"cmd.exe", "/c"} }
