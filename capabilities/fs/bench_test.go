package fs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// BenchmarkRead10MB reads the first window of a 10 MB text file: the whole
// file is still scanned (UTF-8 check, line count).
func BenchmarkRead10MB(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := 0; sb.Len() < 10<<20; i++ {
		fmt.Fprintf(&sb, "%08d the quick brown fox jumps over the lazy dog — ünïcödé\n", i)
	}
	p := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	read := New(Options{Confine: true})[0]
	call := &capabilities.Call{CallID: "c", Name: "read", Args: []byte(`{"file_path":"big.txt"}`), Session: newEnv(dir)}
	b.SetBytes(int64(sb.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := read.Run(context.Background(), call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWrite1MB overwrites a 1 MB file with the same content through
// the write tool: the stat, the read of the old content, the staged and
// fsynced write, the rename and the record (no diff: nothing changed).
func BenchmarkWrite1MB(b *testing.B) {
	dir := b.TempDir()
	content := strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n", 1<<20/64)
	args, err := json.Marshal(map[string]string{"file_path": "big.txt", "content": content})
	if err != nil {
		b.Fatal(err)
	}
	write := New(Options{Confine: true})[1]
	call := &capabilities.Call{CallID: "c", Name: "write", Args: args, Session: newEnv(dir)}
	if _, err := write.Run(context.Background(), call); err != nil { // created, hence observed
		b.Fatal(err)
	}
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := write.Run(context.Background(), call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEdit10kLines edits one line in the middle of a 10,000-line file:
// read, replace, atomic write and the hunk diff.
func BenchmarkEdit10kLines(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&sb, "line %05d: some ordinary source text\n", i)
	}
	p := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	tools := New(Options{Confine: true})
	env := newEnv(dir)
	if _, err := tools[0].Run(context.Background(), &capabilities.Call{Args: []byte(`{"file_path":"f.txt","limit":1}`), Session: env}); err != nil {
		b.Fatal(err)
	}
	edit := tools[2]
	calls := [2]*capabilities.Call{
		{Args: []byte(`{"file_path":"f.txt","old_string":"line 05000: some","new_string":"line 05000: SOME"}`), Session: env},
		{Args: []byte(`{"file_path":"f.txt","old_string":"line 05000: SOME","new_string":"line 05000: some"}`), Session: env},
	}
	b.SetBytes(int64(sb.Len()))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := edit.Run(context.Background(), calls[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkHunks10kLines is the diff alone for the same change.
func BenchmarkHunks10kLines(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&sb, "line %05d: some ordinary source text\n", i)
	}
	old := sb.String()
	new := strings.Replace(old, "line 05000: some", "line 05000: SOME", 1)
	b.ReportAllocs()
	for b.Loop() {
		if len(Hunks("f.txt", old, new)) != 1 {
			b.Fatal("want one hunk")
		}
	}
}

// BenchmarkHunksRewrite2000 diffs two 2000-line texts with no line in
// common: past diffBudget, so this is the cost of giving up.
func BenchmarkHunksRewrite2000(b *testing.B) {
	var o, n strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&o, "old %d\n", i)
		fmt.Fprintf(&n, "new %d\n", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		Hunks("f.txt", o.String(), n.String())
	}
}

// BenchmarkHunksRewrite1000 is the same at 1000 lines: just within the
// budget, an exact diff.
func BenchmarkHunksRewrite1000(b *testing.B) {
	var o, n strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&o, "old %d\n", i)
		fmt.Fprintf(&n, "new %d\n", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		Hunks("f.txt", o.String(), n.String())
	}
}
