package main

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// capMemory puts the worker in a Job Object whose process memory limit is
// mem: past it the worker's allocations fail and the runtime ends the
// process, which the agent reports as the memory limit. The job also
// kills the worker when its last handle closes.
func capMemory(mem int64) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_PROCESS_MEMORY | windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
		ProcessMemoryLimit: uintptr(mem),
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return err
	}
	return windows.AssignProcessToJobObject(job, windows.CurrentProcess())
}

// confine does nothing more on Windows, where no sandbox backend exists:
// the Job Object of capMemory is the worker's bound.
func confine() error { return nil }
