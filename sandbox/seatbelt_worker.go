package sandbox

import (
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The worker profile's parameters: the executable (its canonical path,
// then the path it is started by when that differs), and each directory
// above them.
const (
	workerExeParam = "WORKER_EXE_"
	workerDirParam = "WORKER_DIR_"
)

// WorkerProfile returns the Seatbelt profile for a helper process the
// agent starts for itself and feeds over its stdio, such as the program
// worker, started by the absolute path exe, with the parameters it reads.
// Unlike the session profiles ([Seatbelt.Profile]), which allow by default
// and take away writes, it denies by default and gives back only what such
// a process needs to run:
//
//   - the basics every macOS process needs (Apple's system.sb: dyld and
//     the system libraries, the sysctls and services libSystem's start-up
//     reads);
//   - reading and executing its own executable (by its canonical path and,
//     when exe is a symbolic link, by exe too; paths are passed as -D
//     parameters, never as profile text), and the metadata of the
//     directories above them, which dyld walks;
//   - reading the time zone database, for JavaScript's local dates;
//   - sysctl reads and signals to itself.
//
// It then takes away, whatever system.sb grants: every file write (no
// writable root at all, not even /dev/null or a temp dir), every network
// operation (no loopback and no Unix socket either: the worker's only
// channel is the pipes it was started with, which need no rule), and
// forking. Nothing else is readable: not the workspace, not the home
// directory, not /tmp.
func (s *Seatbelt) WorkerProfile(exe string) (string, []SeatbeltParam) {
	exes := workerPaths(exe, s.real)
	var params []SeatbeltParam
	var exeRules, dirRules strings.Builder
	var dirs []string
	for i, e := range exes {
		p := SeatbeltParam{Name: workerExeParam + strconv.Itoa(i), Value: e}
		params = append(params, p)
		exeRules.WriteString(` (literal (param "` + p.Name + `"))`)
		for _, d := range ancestors(e) {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	for i, d := range dirs {
		p := SeatbeltParam{Name: workerDirParam + strconv.Itoa(i), Value: d}
		params = append(params, p)
		dirRules.WriteString(` (literal (param "` + p.Name + `"))`)
	}
	forms := []string{
		"(version 1)",
		"(deny default)",
		`(import "system.sb")`,
		"(allow file-read*" + exeRules.String() + ")",
		"(allow process-exec" + exeRules.String() + ")",
		"(allow file-read-metadata" + dirRules.String() + ")",
		`(allow file-read* (literal "/private/etc/localtime") (subpath "/private/var/db/timezone") (subpath "/usr/share/zoneinfo"))`,
		"(allow sysctl-read)",
		"(allow signal (target self))",
		// Last matching rule wins: these hold over anything above.
		"(deny file-write*)",
		"(deny network*)",
		"(deny process-fork)",
	}
	return strings.Join(forms, "\n") + "\n", params
}

// WrapWorker returns `<sandbox-exec> -D NAME=value… -p <profile> --
// <exe> args…`: argv (the helper's executable first, made absolute) under
// [Seatbelt.WorkerProfile]. The executable keeps the name it was given (a
// helper may read its mode from it), the profile allows it by that name
// and by its canonical path.
func (s *Seatbelt) WrapWorker(argv []string) []string {
	exe := absPath(argv[0])
	profile, params := s.WorkerProfile(exe)
	out := []string{s.path()}
	for _, p := range params {
		out = append(out, "-D", p.Name+"="+p.Value)
	}
	out = append(out, "-p", profile, "--", exe)
	return append(out, argv[1:]...)
}

// workerPaths are the canonical path of exe and, when it differs, exe
// itself (absolute and clean).
func workerPaths(exe string, real func(string) string) []string {
	exe = absPath(exe)
	if r := real(exe); r != exe {
		return []string{r, exe}
	}
	return []string{exe}
}

// absPath is p absolute and clean (p cleaned when it cannot be made
// absolute).
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// ancestors are the directories above the clean absolute macOS path p,
// from the root down ("/a/b/c": "/", "/a", "/a/b").
func ancestors(p string) []string {
	var out []string
	for d := path.Dir(p); ; d = path.Dir(d) {
		out = append(out, d)
		if d == path.Dir(d) {
			break
		}
	}
	slices.Reverse(out)
	return out
}
