package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/fs"
)

// BenchmarkEightReads is one turn whose step reads eight 200 KB files
// through the real read tool, sequentially and concurrently.
func BenchmarkEightReads(b *testing.B) {
	dir := b.TempDir()
	line := strings.Repeat("x", 99) + "\n"
	for i := range 8 {
		require.NoError(b, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat(line, 2000)), 0o644))
	}
	var calls []llm.Chunk
	for i := range 8 {
		calls = append(calls, toolCall(i, fmt.Sprintf("c%d", i), "read", fmt.Sprintf(`{"file_path":"f%d.txt","limit":500}`, i))...)
	}
	calls = append(calls, finish(llm.FinishToolCalls))
	for _, mode := range []struct {
		name     string
		parallel bool
	}{{"sequential", false}, {"concurrent", true}} {
		b.Run(mode.name, func(b *testing.B) {
			for b.Loop() {
				p := newScripted([][]llm.Chunk{calls, {text(0, "ok"), finish(llm.FinishStop)}})
				rt := NewRuntime(Config{Model: "m", Provider: p, Clock: func() int64 { return 0 }, NewID: func() string { return "s" },
					Tools: func(capabilities.Env) *capabilities.Registry {
						return capabilities.NewRegistry(fs.New(fs.Options{Confine: true})...)
					},
					Log: zerolog.Nop(), ParallelReads: mode.parallel})
				s, err := rt.NewSession(context.Background(), SessionOptions{Cwd: dir})
				if err != nil {
					b.Fatal(err)
				}
				s.Prompt(context.Background(), "read")
			}
		})
	}
}
