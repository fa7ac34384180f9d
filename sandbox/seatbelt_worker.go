package sandbox

import (
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// The worker profile's parameters: the executable, and each directory
// above it.
const (
	workerExeParam = "WORKER_EXE"
	workerDirParam = "WORKER_DIR_"
)

// WorkerProfile returns the Seatbelt profile for a helper process the
// agent starts for itself and feeds over its stdio, such as the program
// worker, with the parameters it reads. Unlike the session profiles
// ([Seatbelt.Profile]), which allow by default and take away writes, it
// denies by default and gives back only what such a process needs to run:
//
//   - the basics every macOS process needs (Apple's system.sb: dyld and
//     the system libraries, the sysctls and services libSystem's start-up
//     reads);
//   - reading and executing its own executable exe (canonicalized, like
//     every path, and passed as a -D parameter, never as profile text),
//     and the metadata of the directories above it, which dyld walks;
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
	if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	exe = s.real(exe)
	params := []SeatbeltParam{{Name: workerExeParam, Value: exe}}
	var dirs strings.Builder
	for i, d := range ancestors(exe) {
		p := SeatbeltParam{Name: workerDirParam + strconv.Itoa(i), Value: d}
		params = append(params, p)
		dirs.WriteString(` (literal (param "` + p.Name + `"))`)
	}
	forms := []string{
		"(version 1)",
		"(deny default)",
		`(import "system.sb")`,
		`(allow file-read* (literal (param "` + workerExeParam + `")))`,
		`(allow process-exec (literal (param "` + workerExeParam + `")))`,
		"(allow file-read-metadata" + dirs.String() + ")",
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
// <exe> args…`: argv (the helper's executable first) under
// [Seatbelt.WorkerProfile], with the executable named by its canonical
// path, the one the profile allows.
func (s *Seatbelt) WrapWorker(argv []string) []string {
	profile, params := s.WorkerProfile(argv[0])
	out := []string{s.path()}
	for _, p := range params {
		out = append(out, "-D", p.Name+"="+p.Value)
	}
	out = append(out, "-p", profile, "--", params[0].Value)
	return append(out, argv[1:]...)
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
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
