//go:build windows

package proctree

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

type groupSys struct {
	mu  sync.Mutex
	job windows.Handle // 0 once closed
}

// Prepare gives cmd a new console process group (so that a console
// control event sent to ours does not reach it, nor one sent to it ours).
// A command prepared so and started by someone else is ended with
// [KillTree].
func Prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP
}

// KillTree ends pid and every process descended from it, as far as the
// process table still links them by parent id (a process whose parent
// already exited is not found: Windows keeps no orphan chain, which is
// why [Start] uses a Job Object instead).
func KillTree(pid int) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return fmt.Errorf("proctree: process snapshot: %w", err)
	}
	children := map[uint32][]uint32{}
	var pe windows.ProcessEntry32
	pe.Size = uint32(unsafe.Sizeof(pe))
	for err = windows.Process32First(snap, &pe); err == nil; err = windows.Process32Next(snap, &pe) {
		children[pe.ParentProcessID] = append(children[pe.ParentProcessID], pe.ProcessID)
	}
	_ = windows.CloseHandle(snap)
	var errs []error
	seen := map[uint32]bool{}
	var walk func(p uint32)
	walk = func(p uint32) {
		if seen[p] {
			return
		}
		seen[p] = true
		if err := terminatePID(p); err != nil {
			errs = append(errs, err)
		}
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(uint32(pid))
	return errors.Join(errs...)
}

func terminatePID(pid uint32) error {
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.TerminateProcess(h, 1)
}

func start(cmd *exec.Cmd) (*Group, error) {
	Prepare(cmd)
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("proctree: create job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return nil, fmt.Errorf("proctree: set job limits: %w", err)
	}
	if err := cmd.Start(); err != nil {
		_ = windows.CloseHandle(job)
		return nil, err
	}
	pid := uint32(cmd.Process.Pid)
	if err := assign(job, pid); err != nil {
		_ = cmd.Process.Kill()
		_ = windows.CloseHandle(job)
		return nil, err
	}
	if err := resume(pid); err != nil {
		_ = windows.TerminateJobObject(job, 1)
		_ = windows.CloseHandle(job)
		return nil, err
	}
	g := &Group{pid: int(pid)}
	g.sys.job = job
	return g, nil
}

// assign puts the suspended process pid into job.
func assign(job windows.Handle, pid uint32) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return fmt.Errorf("proctree: open process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		return fmt.Errorf("proctree: assign process %d to its job: %w", pid, err)
	}
	return nil
}

// resume resumes every thread of the suspended process pid (a process
// created suspended has exactly one).
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("proctree: thread snapshot: %w", err)
	}
	defer windows.CloseHandle(snap)
	var te windows.ThreadEntry32
	te.Size = uint32(unsafe.Sizeof(te))
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("proctree: open thread %d: %w", te.ThreadID, err)
		}
		_, err = windows.ResumeThread(th)
		_ = windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("proctree: resume thread %d: %w", te.ThreadID, err)
		}
		resumed++
	}
	if resumed == 0 {
		return fmt.Errorf("proctree: no thread of process %d to resume", pid)
	}
	return nil
}

func (g *Group) terminate() error { return g.kill() }

func (g *Group) kill() error {
	g.sys.mu.Lock()
	defer g.sys.mu.Unlock()
	if g.sys.job == 0 {
		return nil
	}
	return windows.TerminateJobObject(g.sys.job, 1)
}

// basicAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type basicAccounting struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

func (g *Group) alive() bool {
	g.sys.mu.Lock()
	defer g.sys.mu.Unlock()
	if g.sys.job == 0 {
		return false
	}
	var info basicAccounting
	if err := windows.QueryInformationJobObject(g.sys.job, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		return false
	}
	return info.ActiveProcesses > 0
}

func (g *Group) close() error {
	g.sys.mu.Lock()
	defer g.sys.mu.Unlock()
	if g.sys.job == 0 {
		return nil
	}
	err := windows.CloseHandle(g.sys.job)
	g.sys.job = 0
	return err
}
