package localfs

import (
	"errors"
	"testing"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// TestWinRel checks the Windows path handling of the file tools on any
// system: case-insensitive roots, both separators, ".." that cannot climb
// out, UNC roots, and prefixes that are not parents.
func TestWinRel(t *testing.T) {
	roots := []string{`C:\work\proj`, `\\srv\share\repo`}
	for _, c := range []struct{ path, want string }{
		{`C:\work\proj`, "."},
		{`c:\WORK\Proj\src\a.go`, `src\a.go`},
		{`C:/work/proj/src/b.go`, `src\b.go`},
		{`C:\work\proj\src\..\c.go`, `c.go`},
		{`\\srv\share\repo\x`, `x`},
		{`\\SRV\Share\repo`, "."},
	} {
		got, err := winRel(c.path, roots...)
		if err != nil || got != c.want {
			t.Errorf("winRel(%q) = %q, %v; want %q", c.path, got, err, c.want)
		}
	}
	for _, p := range []string{
		`C:\work\proj2\a`,         // a sibling sharing the prefix
		`C:\work\proj\..\other`,   // climbs out
		`D:\work\proj\a`,          // another drive
		`\work\proj\a`,            // no volume
		`work\proj\a`,             // relative
		`\\srv\share\repo2`,       // a sibling share dir
		`\\?\C:\work\proj\a`,      // device path syntax is not a root's spelling
		`C:\work\proj\..\..\..\x`, // above the volume
	} {
		if got, err := winRel(p, roots...); !errors.Is(err, capabilities.ErrOutsideRoot) {
			t.Errorf("winRel(%q) = %q, %v; want ErrOutsideRoot", p, got, err)
		}
	}
	if got, err := winRel(`C:\x\y`, `C:\`); err != nil || got != `x\y` {
		t.Errorf("drive root: %q, %v", got, err)
	}
}
