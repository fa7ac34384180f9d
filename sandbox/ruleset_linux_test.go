//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The Landlock subreaper's ruleset is built once per policy and handed to
// each helper; it must stay as strict as one built per command: a secret
// created after the build is hidden from the next command, a file created
// beside the secrets after the build is readable by the next command, and
// the ruleset itself (its descriptor, its variable) never reaches the
// command, which could otherwise add rules to it for every later command.
func TestSubreaperRulesetCache(t *testing.T) {
	b := &Landlock{Launcher: testLauncher(t), NoNamespaces: true}
	requireBackend(t, b)
	f := newContainFixture(t)
	aws := filepath.Join(f.home, ".aws")
	p := f.policy(WorkspaceWrite, f.ws)
	p.Hidden = append(p.Hidden, aws)
	settle := func() { time.Sleep(3 * racyWindow) } // so that a build is kept

	kept := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.rulesets)
	}
	// A build is kept once no directory it listed changed just before
	// (the fixture's /var/tmp is shared with other tests: try again).
	var r runResult
	for attempt := 0; attempt < 20 && kept() == 0; attempt++ {
		settle()
		r = run(t, confinePolicy(t, b, p, "cat "+filepath.Join(f.home, "notes.txt")+"; ls -l /proc/self/fd/; env"), f.ws)
		expectOK(t, b, r)
		if !strings.Contains(r.stdout, "notes") {
			t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout, "landlock-ruleset") || strings.Contains(r.stdout, rulesetEnv) {
			t.Fatalf("the command got the ruleset: %s", r.stdout)
		}
	}
	if kept() != 1 {
		t.Fatalf("%d rulesets kept, want 1", kept())
	}

	// A secret appears after the build (the user ran `aws configure`).
	if err := os.MkdirAll(aws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(aws, "credentials"), []byte("AKIASECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// And an ordinary file beside the secrets.
	if err := os.WriteFile(filepath.Join(f.home, "later.txt"), []byte("later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, confinePolicy(t, b, p, "cat "+filepath.Join(aws, "credentials")+" 2>/dev/null; cat "+filepath.Join(f.home, "later.txt")+"; cat "+f.key+" 2>/dev/null; true"), f.ws)
	if strings.Contains(r.stdout, "AKIASECRET") || strings.Contains(r.stdout, "PRIVATE") {
		t.Fatalf("a secret was read: %q", r.stdout)
	}
	if !strings.Contains(r.stdout, "later") {
		t.Fatalf("a file created beside the secrets after the build is unreadable: stdout %q stderr %q", r.stdout, r.stderr)
	}

	// Each time a kept ruleset is in use, a file created in a listed
	// directory is readable by the next command.
	for i := range 3 {
		settle()
		r = run(t, confinePolicy(t, b, p, "true"), f.ws) // builds and keeps
		name := filepath.Join(f.home, "n"+string(rune('0'+i)))
		if err := os.WriteFile(name, []byte("fresh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r = run(t, confinePolicy(t, b, p, "cat "+name), f.ws)
		if !strings.Contains(r.stdout, "fresh") {
			t.Fatalf("command %d: stdout %q stderr %q", i, r.stdout, r.stderr)
		}
	}
}

// A helper handed something that is not a Landlock ruleset refuses to
// run the command.
func TestSubreaperRejectsAForeignRuleset(t *testing.T) {
	b := &Landlock{Launcher: testLauncher(t), NoNamespaces: true}
	requireBackend(t, b)
	f := newEscapeFixture(t)
	s := confinePolicy(t, b, Policy{Mode: WorkspaceWrite, WorkspaceRoot: f.root}, "echo RAN")
	s.setup = nil
	s.env = append(os.Environ(), rulesetEnv+"=2,0")
	r := run(t, s, f.root)
	if strings.Contains(r.stdout, "RAN") || r.code != HelperExitCode {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if v := b.Classify(r.code, r.stderr); !v.RunnerFailure {
		t.Fatalf("verdict %+v", v)
	}
}
