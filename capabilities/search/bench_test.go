package search

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// benchTree is 10,000 small files in 100 directories, one in fifty holding
// the needle.
func benchTree(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	body := strings.Repeat("some ordinary source text line\n", 40)
	for i := range 10000 {
		d := filepath.Join(dir, fmt.Sprintf("d%02d", i%100))
		require.NoError(b, os.MkdirAll(d, 0o755))
		c := body
		if i%50 == 0 {
			c += "the needle is here\n"
		}
		require.NoError(b, os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), []byte(c), 0o644))
	}
	return dir
}

// BenchmarkGrep10kFiles is the grep tool over a 10k-file tree ("tool")
// against the same rg argv run directly and read whole ("rg"), on one
// shared tree: the difference is the tool's own cost.
func BenchmarkGrep10kFiles(b *testing.B) {
	needRG(b)
	dir := benchTree(b)
	r := capabilities.NewRegistry(New(Options{})...)
	g := &Grep{opts: Options{}.withDefaults()}
	argv := g.argv("rg", grepArgs{Pattern: "needle"}, "")
	for range 2 { // alternate, so neither side gets the colder cache
		b.Run("tool", func(b *testing.B) {
			for b.Loop() {
				out := r.Execute(context.Background(), env{dir}, "c", "grep", `{"pattern":"needle"}`)
				if out.IsError || !strings.Contains(text(out), "[200 matches in 200 files]") {
					b.Fatal(text(out))
				}
			}
		})
		b.Run("rg", func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Dir = dir
				out, err := cmd.Output()
				if err != nil || len(out) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}
