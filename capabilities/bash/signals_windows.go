package bash

import "syscall"

// systemSignalName: Windows has no signals beyond the portable ones.
func systemSignalName(syscall.Signal) (string, bool) { return "", false }
