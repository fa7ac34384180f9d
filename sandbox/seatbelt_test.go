package sandbox

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
)

// macOS as the profile generator sees it: /tmp and /var are symbolic
// links into /private, the OS temp dir is a per-user folder under /var.
func fakeMac() *Seatbelt {
	return &Seatbelt{
		TempDir: func() string { return "/var/folders/zz/x1_y2/T/" },
		Realpath: func(p string) (string, error) {
			for _, pre := range []string{"/tmp", "/var"} {
				if p == pre || strings.HasPrefix(p, pre+"/") {
					return "/private" + p, nil
				}
			}
			return p, nil
		},
	}
}

var bashArgv = []string{"bash", "-c", "echo hi > out.txt"}

// TestSeatbeltContractForm checks the upstream compositions' argv and
// profile against sandbox-approval-modes.md § 2 byte for byte: the forms
// joined by one space, the workspace-write subpaths over the distinct
// real paths of the root, /tmp and the OS temp dir, quoted with `\` and
// `"` escaped.
func TestSeatbeltContractForm(t *testing.T) {
	s := fakeMac()
	s.Contract = true
	const base = `(version 1) (allow default) (deny file-write*) (allow file-write* (literal "/dev/null"))`

	ro := s.Wrap(Policy{Mode: ReadOnly, WorkspaceRoot: "/Users/me/proj"}, bashArgv)
	assert.Equal(t, []string{SeatbeltPath, "-p", base, "--", "bash", "-c", "echo hi > out.txt"}, ro)

	ww := s.Wrap(Policy{Mode: WorkspaceWrite, WorkspaceRoot: "/Users/me/proj"}, bashArgv)
	assert.Equal(t, []string{SeatbeltPath, "-p",
		base + ` (allow file-write* (subpath "/Users/me/proj") (subpath "/private/tmp") (subpath "/private/var/folders/zz/x1_y2/T"))`,
		"--", "bash", "-c", "echo hi > out.txt"}, ww)

	// A root under /tmp resolves to /private/tmp/…, distinct from
	// /private/tmp itself; a temp dir equal to /tmp collapses.
	s.TempDir = func() string { return "/tmp" }
	got := s.Wrap(Policy{Mode: WorkspaceWrite, WorkspaceRoot: "/tmp/ws"}, bashArgv)
	assert.Equal(t, base+` (allow file-write* (subpath "/private/tmp/ws") (subpath "/private/tmp"))`, got[2])

	// Quoting: backslash and double quote are escaped, nothing else.
	got = s.Wrap(Policy{Mode: WorkspaceWrite, WorkspaceRoot: `/Users/me/a "q" \b (x)`}, bashArgv)
	assert.Contains(t, got[2], `(subpath "/Users/me/a \"q\" \\b (x)")`)

	golden.Assert(t, render(t, ro, ww), "seatbelt/contract.golden")
}

// TestSeatbeltDefaultForm checks the default composition's profile: every
// root canonical and passed as a -D parameter (so no path is parsed as
// profile text), a session temp dir instead of the host's /tmp, TMPDIR set
// through /usr/bin/env, nested roots folded into their parent.
func TestSeatbeltDefaultForm(t *testing.T) {
	s := fakeMac()
	hostile := `/Users/me/x")) (allow file-write* (subpath "/`
	ww := s.Wrap(Policy{Mode: WorkspaceWrite, WorkspaceRoot: "/Users/me/proj",
		ExtraRoots: []string{"/var/data/extra", hostile, "/Users/me/proj/sub"}, TmpDir: "/var/folders/zz/x1_y2/T/dsh-s1"}, bashArgv)
	ro := s.Wrap(Policy{Mode: ReadOnly, WorkspaceRoot: "/Users/me/proj", TmpDir: "/var/folders/zz/x1_y2/T/dsh-s1"}, bashArgv)
	plain := s.Wrap(Policy{Mode: WorkspaceWrite, WorkspaceRoot: "/tmp/ws"}, bashArgv)

	profile := ww[indexOf(ww, "-p")+1]
	assert.NotContains(t, profile, "/Users", "paths never enter the profile text")
	assert.Equal(t, 4, strings.Count(profile, `(subpath (param "WRITABLE_ROOT_`), "root, two extra roots, the temp dir (the nested root folds)")
	assert.Contains(t, ww, "-D")
	assert.Contains(t, ww, "WRITABLE_ROOT_1=/private/var/data/extra", "canonical path")
	assert.Contains(t, ww, "WRITABLE_ROOT_3=/private/var/folders/zz/x1_y2/T/dsh-s1")
	assert.NotContains(t, strings.Join(ww, "\n"), "/private/tmp", "a session temp dir replaces the host's /tmp")
	assert.Equal(t, []string{"--", envPath, "TMPDIR=/private/var/folders/zz/x1_y2/T/dsh-s1", "bash"}, ww[len(ww)-6:len(ww)-2])
	assert.NotContains(t, ro[indexOf(ro, "-p")+1], "param", "read-only has no writable roots")
	assert.Contains(t, plain, "WRITABLE_ROOT_0=/private/tmp", "without a session temp dir, /tmp is writable")
	assert.NotContains(t, plain, "WRITABLE_ROOT_0=/private/tmp/ws", "a root beneath /tmp folds into it")

	contained := s.Wrap(Policy{Mode: WorkspaceWrite, WorkspaceRoot: "/Users/me/proj", NoNetwork: true,
		Hidden: []string{"/Users/me/.ssh"}, Protected: []string{"/Users/me/proj/.git/hooks"}}, bashArgv)
	cp := contained[indexOf(contained, "-p")+1]
	assert.Contains(t, contained, "PROTECTED_0=/Users/me/proj/.git/hooks")
	assert.Contains(t, contained, "HIDDEN_0=/Users/me/.ssh")
	assert.Contains(t, cp, "(deny network*)")
	assert.Greater(t, strings.Index(cp, `(deny file-write* (subpath (param "PROTECTED_0")))`), strings.Index(cp, `(param "WRITABLE_ROOT_0")`),
		"the protected deny comes after the writable allow (last match wins)")
	assert.Contains(t, cp, `(deny file-read* file-write* (subpath (param "HIDDEN_0")))`)

	golden.Assert(t, render(t, ww, ro, plain, contained), "seatbelt/default.golden")
}

// TestSeatbeltWorkspaceWriteDeniesOutside reads the default profile the
// way Seatbelt evaluates it (last matching rule wins, allow default, deny
// every file write, allow the listed subpaths): a write outside every
// root is denied, one inside allowed. The golden pins the same text.
func TestSeatbeltWorkspaceWriteDeniesOutside(t *testing.T) {
	s := fakeMac()
	profile, params := s.Profile(Policy{Mode: WorkspaceWrite, WorkspaceRoot: "/Users/me/proj"})
	writable := func(path string) bool {
		allowed := false
		for _, line := range strings.Split(strings.TrimSpace(profile), "\n") {
			switch {
			case line == "(deny file-write*)":
				allowed = false
			case strings.HasPrefix(line, "(allow file-write*"):
				for _, p := range params {
					if strings.Contains(line, `(param "`+p.Name+`")`) && beneath(path, p.Value) {
						allowed = true
					}
				}
				if strings.Contains(line, `(literal "`+path+`")`) {
					allowed = true
				}
			}
		}
		return allowed
	}
	assert.True(t, writable("/Users/me/proj/out.txt"))
	assert.True(t, writable("/private/tmp/x"))
	assert.True(t, writable("/dev/null"))
	assert.False(t, writable("/Users/me/.ssh/authorized_keys"))
	assert.False(t, writable("/Users/me/project-sibling/x"))
}

// TestSeatbeltClassifyAndSelect checks the § 3 dialect and that selection
// runs nothing.
func TestSeatbeltClassifyAndSelect(t *testing.T) {
	s := &Seatbelt{}
	v := s.Classify(1, "bash: out.txt: Operation not permitted\n")
	assert.True(t, v.Denied)
	v = s.Classify(71, "sandbox-exec: sandbox_apply: Operation not permitted\n")
	assert.True(t, v.RunnerFailure, "runner failure outranks denial")
	assert.Equal(t, "sandbox-exec: sandbox_apply: Operation not permitted", v.Detail)
	v = s.Classify(127, "bash: line 1: /usr/bin/sandbox-exec: No such file or directory\n")
	assert.True(t, v.RunnerFailure, "a missing sandbox-exec fails closed")
	assert.Equal(t, Verdict{}, s.Classify(0, "operation not permitted"))

	p := NewProvider(&Seatbelt{Path: "/nonexistent/sandbox-exec"})
	c, err := p.Confine(t.Context(), bashArgv, Policy{Mode: ReadOnly, WorkspaceRoot: "/"})
	require.NoError(t, err, "the sole candidate is selected without probing")
	assert.Equal(t, "/nonexistent/sandbox-exec", c.Argv[0])
	assert.Equal(t, EnforcementFull, c.Enforcement)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// render shows argvs one element per line, JSON-quoted, for the goldens.
func render(t *testing.T, argvs ...[]string) string {
	var b strings.Builder
	for _, argv := range argvs {
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		for _, a := range argv {
			require.NoError(t, enc.Encode(a))
		}
		b.WriteString("----\n")
	}
	return b.String()
}
