package hooks

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// benchSandbox is the host's confinement (workspace-write), or nil.
func benchSandbox(b *testing.B) *Sandboxing {
	l, err := sandbox.HelperLauncher()
	if err != nil {
		b.Fatal(err)
	}
	p := sandbox.NewProvider(sandbox.DefaultChain(l)...)
	if _, _, err := p.Select(context.Background(), sandbox.WorkspaceWrite); err != nil {
		b.Skipf("no sandbox backend: %v", err)
	}
	return &Sandboxing{Confiner: p, Mode: func(pipeline.Conversation) sandbox.Mode { return sandbox.WorkspaceWrite },
		Root: func(s pipeline.Conversation) string { return s.Cwd() }}
}

// BenchmarkConfinedProcessStart is the floor a hook is measured against:
// confine `bash -c true` and run it, as the bash tool's executor does.
func BenchmarkConfinedProcessStart(b *testing.B) {
	sb := benchSandbox(b)
	dir := b.TempDir()
	s := stubSession{cwd: dir}
	for b.Loop() {
		c, err := sb.Confiner.Confine(context.Background(), []string{"bash", "-c", "true"}, sandbox.Policy{Mode: sb.Mode(s), WorkspaceRoot: dir})
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("bash", "-c", sandbox.ExecLine(c.Argv))
		cmd.Dir = dir
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNoOpHookAtPreToolUse is one matching no-op hook through the
// bridge: payload, confined run, decode, hook/invoked + hook/result.
func BenchmarkNoOpHookAtPreToolUse(b *testing.B) {
	sb := benchSandbox(b)
	c, err := Parse(Claude, []byte(`{"PreToolUse":[{"matcher":"bash","hooks":[{"command":"true"}]}]}`), ParseOptions{})
	if err != nil {
		b.Fatal(err)
	}
	br := &Bridge{Config: c, Runner: &Runner{Sandbox: sb}, Log: zerolog.Nop()}
	s := turnSession(b)
	call := pipeline.Call{CallID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}
	for b.Loop() {
		d, _ := br.CheckTool(context.Background(), s, call)
		if d.Verdict != pipeline.ToolPass {
			b.Fatal(d)
		}
	}
}

// BenchmarkNoHooksAtPreToolUse is a bridge with hooks for other points
// only: what a tool call pays when nothing matches.
func BenchmarkNoHooksAtPreToolUse(b *testing.B) {
	c, err := Parse(Claude, []byte(`{"Stop":[{"hooks":[{"command":"true"}]}]}`), ParseOptions{})
	if err != nil {
		b.Fatal(err)
	}
	br := &Bridge{Config: c, Runner: &Runner{}, Log: zerolog.Nop()}
	s := turnSession(b)
	call := pipeline.Call{CallID: "c1", Name: "bash", Args: json.RawMessage(`{}`)}
	for b.Loop() {
		_, _ = br.CheckTool(context.Background(), s, call)
	}
}
