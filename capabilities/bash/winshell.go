package bash

import (
	"errors"
	"fmt"
	"strings"
)

// BashEnv names the environment variable that points the bash tool at a
// bash.exe on Windows, ahead of every other place it is looked for.
const BashEnv = "DSH_ACP_BASH"

// winShell is what findWindowsBash consults: the environment, the PATH
// lookup and the file system, injected so that the search runs as pure
// logic on every system.
type winShell struct {
	getenv   func(string) string
	lookPath func(string) (string, error)
	isFile   func(string) bool
}

// errNoWindowsBash is wrapped by the error of a failed search.
var errNoWindowsBash = errors.New("Git for Windows' bash.exe was not found")

// findWindowsBash returns the bash.exe commands run through on Windows:
//
//  1. %DSH_ACP_BASH%, when set (an error when it names no file);
//  2. Git for Windows found through git.exe on PATH: its installation's
//     bin\bash.exe (git.exe lives in cmd\, bin\ or mingw64\bin\);
//  3. the standard installations: %ProgramFiles%, %ProgramW6432% and
//     %ProgramFiles(x86)% \Git\bin\bash.exe, the per-user
//     %LocalAppData%\Programs\Git\bin\bash.exe, and Scoop's
//     %USERPROFILE%\scoop\apps\git\current\bin\bash.exe;
//  4. bash.exe on PATH, unless it is the WSL launcher in %SystemRoot%\System32
//     or a WindowsApps alias, which run the command in a Linux VM with other
//     paths and another file system.
//
// bin\bash.exe (not usr\bin\bash.exe) is Git's launcher that puts its Unix
// tools on PATH. The error names what to install.
func findWindowsBash(w winShell) (string, error) {
	if p := w.getenv(BashEnv); p != "" {
		if w.isFile(p) {
			return p, nil
		}
		return "", fmt.Errorf("%s=\"%s\" names no file; point it at a bash.exe (Git for Windows' is <Git>\\bin\\bash.exe)", BashEnv, p)
	}
	var looked []string
	try := func(p string) bool {
		looked = append(looked, p)
		return w.isFile(p)
	}
	if git, err := w.lookPath("git.exe"); err == nil {
		dir := winDir(git)
		for _, sub := range []string{`\mingw64\bin`, `\mingw32\bin`, `\clangarm64\bin`, `\cmd`, `\bin`} {
			if len(dir) > len(sub) && strings.EqualFold(dir[len(dir)-len(sub):], sub) {
				if p := dir[:len(dir)-len(sub)] + `\bin\bash.exe`; try(p) {
					return p, nil
				}
				break
			}
		}
	}
	for _, base := range []struct{ env, rest string }{
		{"ProgramFiles", `\Git\bin\bash.exe`},
		{"ProgramW6432", `\Git\bin\bash.exe`},
		{"ProgramFiles(x86)", `\Git\bin\bash.exe`},
		{"LocalAppData", `\Programs\Git\bin\bash.exe`},
		{"USERPROFILE", `\scoop\apps\git\current\bin\bash.exe`},
	} {
		if v := strings.TrimRight(w.getenv(base.env), `\`); v != "" {
			if p := v + base.rest; try(p) {
				return p, nil
			}
		}
	}
	if p, err := w.lookPath("bash.exe"); err == nil && !wslLauncher(p, w.getenv("SystemRoot")) {
		return p, nil
	}
	return "", fmt.Errorf("%w (looked at %%%s%%, git.exe on PATH, %s and bash.exe on PATH); "+
		"install Git for Windows (https://git-scm.com/download/win) or set %s to the full path of a bash.exe",
		errNoWindowsBash, BashEnv, strings.Join(looked, ", "), BashEnv)
}

// wslLauncher reports whether p is the WSL bash.exe in System32 or an App
// Execution Alias in a WindowsApps directory.
func wslLauncher(p, systemRoot string) bool {
	dir := strings.ToLower(winDir(p))
	if systemRoot == "" {
		systemRoot = `C:\Windows`
	}
	sys := strings.ToLower(strings.TrimRight(systemRoot, `\`))
	return dir == sys+`\system32` || dir == sys+`\sysnative` || strings.HasSuffix(dir, `\windowsapps`)
}

// winDir returns the directory part of a Windows path.
func winDir(p string) string {
	p = strings.ReplaceAll(p, "/", `\`)
	if i := strings.LastIndexByte(p, '\\'); i >= 0 {
		return p[:i]
	}
	return ""
}
