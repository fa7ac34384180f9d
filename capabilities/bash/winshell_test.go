package bash

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// fakeWindows is a Windows machine as findWindowsBash sees it.
type fakeWindows struct {
	env   map[string]string
	path  map[string]string // program -> what PATH finds
	files map[string]bool
}

func (f fakeWindows) shell() winShell {
	return winShell{
		getenv: func(k string) string { return f.env[k] },
		lookPath: func(name string) (string, error) {
			if p, ok := f.path[name]; ok {
				return p, nil
			}
			return "", os.ErrNotExist
		},
		isFile: func(p string) bool { return f.files[p] },
	}
}

func stdEnv() map[string]string {
	return map[string]string{
		"ProgramFiles": `C:\Program Files`, "ProgramFiles(x86)": `C:\Program Files (x86)`,
		"LocalAppData": `C:\Users\u\AppData\Local`, "USERPROFILE": `C:\Users\u`, "SystemRoot": `C:\Windows`,
	}
}

// TestFindWindowsBash runs the Windows bash.exe discovery on any system:
// the override, Git found through git.exe, the standard installations,
// a plain bash.exe on PATH, and the WSL launcher that must never be used.
func TestFindWindowsBash(t *testing.T) {
	cases := []struct {
		name string
		fw   fakeWindows
		want string
	}{
		{"override wins", fakeWindows{env: map[string]string{BashEnv: `D:\tools\bash.exe`, "ProgramFiles": `C:\Program Files`},
			files: map[string]bool{`D:\tools\bash.exe`: true, `C:\Program Files\Git\bin\bash.exe`: true}}, `D:\tools\bash.exe`},
		{"git.exe in cmd", fakeWindows{env: stdEnv(), path: map[string]string{"git.exe": `E:\Git\cmd\git.exe`},
			files: map[string]bool{`E:\Git\bin\bash.exe`: true, `C:\Program Files\Git\bin\bash.exe`: true}}, `E:\Git\bin\bash.exe`},
		{"git.exe in mingw64", fakeWindows{env: stdEnv(), path: map[string]string{"git.exe": `E:\Git\mingw64\bin\git.exe`},
			files: map[string]bool{`E:\Git\bin\bash.exe`: true}}, `E:\Git\bin\bash.exe`},
		{"program files", fakeWindows{env: stdEnv(),
			files: map[string]bool{`C:\Program Files\Git\bin\bash.exe`: true}}, `C:\Program Files\Git\bin\bash.exe`},
		{"per-user install", fakeWindows{env: stdEnv(),
			files: map[string]bool{`C:\Users\u\AppData\Local\Programs\Git\bin\bash.exe`: true}}, `C:\Users\u\AppData\Local\Programs\Git\bin\bash.exe`},
		{"scoop", fakeWindows{env: stdEnv(),
			files: map[string]bool{`C:\Users\u\scoop\apps\git\current\bin\bash.exe`: true}}, `C:\Users\u\scoop\apps\git\current\bin\bash.exe`},
		{"msys2 bash on PATH", fakeWindows{env: stdEnv(), path: map[string]string{"bash.exe": `C:\msys64\usr\bin\bash.exe`}},
			`C:\msys64\usr\bin\bash.exe`},
	}
	for _, c := range cases {
		got, err := findWindowsBash(c.fw.shell())
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

// TestFindWindowsBashRefusesWSLAndSaysWhatToInstall checks that the WSL
// launcher is never picked and that the error names Git for Windows and
// the override.
func TestFindWindowsBashRefusesWSLAndSaysWhatToInstall(t *testing.T) {
	for _, wsl := range []string{`C:\Windows\System32\bash.exe`, `C:\Users\u\AppData\Local\Microsoft\WindowsApps\bash.exe`} {
		fw := fakeWindows{env: stdEnv(), path: map[string]string{"bash.exe": wsl}, files: map[string]bool{wsl: true}}
		_, err := findWindowsBash(fw.shell())
		if !errors.Is(err, errNoWindowsBash) {
			t.Fatalf("%s: err = %v, want errNoWindowsBash", wsl, err)
		}
		for _, want := range []string{"https://git-scm.com/download/win", BashEnv, `C:\Program Files\Git\bin\bash.exe`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
	}
	fw := fakeWindows{env: map[string]string{BashEnv: `D:\nope\bash.exe`}}
	if _, err := findWindowsBash(fw.shell()); err == nil || !strings.Contains(err.Error(), `D:\nope\bash.exe`) {
		t.Fatalf("a dangling override must be an error naming it, got %v", err)
	}
}
