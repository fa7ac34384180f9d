package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The tripwire sees a change that keeps a file's size and modification
// time, whether the file was recorded just after its last change (its
// content is compared again) or long after (its stamp changed), and puts
// the content back; an untouched file is not reported.
func TestTripwireSeesSameSizeChanges(t *testing.T) {
	for _, fresh := range []bool{true, false} {
		root := t.TempDir()
		cfg := filepath.Join(root, ".git", "config")
		if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg, []byte("[core]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if !fresh {
			time.Sleep(3 * racyWindow)
		}
		var rec recordings
		tw := newTripwire(&rec, []string{root}, []string{cfg}, nil, "")
		if tw == nil {
			t.Fatal("nothing guarded")
		}
		if got := tw.Check(); got != nil {
			t.Fatalf("fresh=%v: untouched file reported: %q", fresh, got)
		}
		fi, _ := os.Stat(cfg)
		if err := os.WriteFile(cfg, []byte("[evil]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(cfg, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		if got := tw.Check(); len(got) != 1 || got[0] != cfg {
			t.Fatalf("fresh=%v: reported %q", fresh, got)
		}
		if data, _ := os.ReadFile(cfg); string(data) != "[core]\n" {
			t.Fatalf("fresh=%v: config is %q", fresh, data)
		}
	}
}
