//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExistingResolvesLikeEvalSymlinks: the policy's paths resolve as
// filepath.EvalSymlinks resolves each alone, with the parents' resolution
// shared: through a linked parent, a linked name, a chain of links, a
// relative link, "..", a dangling link and a missing path.
func TestExistingResolvesLikeEvalSymlinks(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	for _, d := range []string{"real/.ssh", "real/.config/gh", "store/aws", "other"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"real/.netrc", "store/npmrc", "other/cfg"} {
		if err := os.WriteFile(filepath.Join(base, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		home:                                  filepath.Join(base, "real"), // the home is a link
		filepath.Join(base, "real/.aws"):      "../store/aws",              // relative
		filepath.Join(base, "real/.npmrc"):    filepath.Join(base, "real/.npmrc2"),
		filepath.Join(base, "real/.npmrc2"):   filepath.Join(base, "store/npmrc"), // a chain
		filepath.Join(base, "real/.kube"):     filepath.Join(base, "nowhere"),     // dangling
		filepath.Join(base, "real/.config/x"): filepath.Join(base, "other"),
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	ps := []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".netrc"), filepath.Join(home, ".aws"),
		filepath.Join(home, ".npmrc"), filepath.Join(home, ".kube"), filepath.Join(home, ".config/gh"),
		filepath.Join(home, ".config/x/cfg"), filepath.Join(home, ".config/x/../gh"), filepath.Join(home, "missing/x"),
		filepath.Join(home, ".netrc/x"), "/", filepath.Join(home, ".ssh")}
	var want []string
	for _, p := range ps {
		if real, err := filepath.EvalSymlinks(p); err == nil && !slices.Contains(want, real) {
			want = append(want, real)
		}
	}
	if got := existing(ps); !slices.Equal(got, want) {
		t.Fatalf("existing:\n got %q\nwant %q", got, want)
	}
	if len(want) != 7 {
		t.Fatalf("the fixture resolves %d paths, not 7: %q", len(want), want)
	}
}

// TestHiddenLaterAndNested: a secret directory that appears between two
// commands is hidden from the second, and a hidden file beneath a hidden
// directory (listed after it) neither breaks the command nor shows, on
// every backend.
func TestHiddenLaterAndNested(t *testing.T) {
	for _, bc := range realBackends {
		t.Run(bc.name, func(t *testing.T) {
			b := bc.new(t)
			f := newContainFixture(t)
			aws := filepath.Join(f.home, ".aws")
			gh := filepath.Join(f.home, ".config", "gh")
			hosts := filepath.Join(gh, "hosts.yml")
			if err := os.MkdirAll(gh, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(hosts, []byte("token: gho_SECRET\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			p := f.policy(WorkspaceWrite, f.ws)
			p.Hidden = append(p.Hidden, aws, gh, hosts)
			read := "cat " + filepath.Join(aws, "credentials") + " " + hosts + " 2>/dev/null; echo done"
			r := run(t, confinePolicy(t, b, p, read), f.ws)
			expectOK(t, b, r)
			if strings.TrimSpace(r.stdout) != "done" {
				t.Fatalf("first command: stdout %q stderr %q", r.stdout, r.stderr)
			}
			if err := os.MkdirAll(aws, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(aws, "credentials"), []byte("aws_secret_access_key=AKIASECRET\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			r = run(t, confinePolicy(t, b, p, read), f.ws)
			expectOK(t, b, r)
			if strings.Contains(r.stdout, "SECRET") || strings.TrimSpace(r.stdout) != "done" {
				t.Fatalf("second command: stdout %q stderr %q", r.stdout, r.stderr)
			}
		})
	}
}
