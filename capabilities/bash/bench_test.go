package bash

import (
	"context"
	"testing"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// BenchmarkTrue runs `true` through the registry pipeline and the bash tool.
func BenchmarkTrue(b *testing.B) {
	tools := New(Options{SpillDir: b.TempDir()})
	env := testEnv{cwd: b.TempDir()}
	tool := tools[0]
	reg := capabilities.NewRegistry(tools...)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		o := reg.Execute(ctx, env, "c", tool.Name(), `{"command":"true","description":"noop"}`)
		if o.IsError || o.Content[0].Text != "(no output)" {
			b.Fatalf("unexpected outcome %+v", o)
		}
	}
}
