package fs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// scripted answers every approval request with one outcome and keeps the
// requests it saw.
type scripted struct {
	mu   sync.Mutex
	out  approval.Outcome
	seen []approval.Request
}

func (s *scripted) Answer(_ context.Context, _ string, req approval.Request) (approval.Outcome, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, req)
	return s.out, true, nil
}

// gated is one session's fs tools behind a ModeGate with a real approval
// service.
type gated struct {
	*harness
	mode     string
	answers  *scripted
	remember []string
}

func newGated(t *testing.T, root, mode string, policy approval.Policy, out approval.Outcome) *gated {
	t.Helper()
	g := &gated{mode: mode, answers: &scripted{out: out}}
	n := 0
	svc := approval.NewService(policy, func() string { n++; return "ap" + strconv.Itoa(n) }, g.answers)
	gate := &ModeGate{
		Mode:     func(*capabilities.Call) string { return g.mode },
		Approver: svc,
		Remember: func(_ *capabilities.Call, m string) { g.remember = append(g.remember, m); g.mode = m },
	}
	h := &harness{t: t, dir: root, env: newEnv(root)}
	h.tools = New(Options{Confine: true, Gate: gate})
	h.reg = capabilities.NewRegistry(h.tools...)
	h.files = h.tools[0].(*readTool).files
	h.env.log.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	g.harness = h
	return g
}

// approvals returns the approval events logged so far, as compact JSON
// data, and forgets them.
func (g *gated) approvals() []string {
	var out []string
	for _, ev := range g.env.log.Events() {
		if ev.Type == session.TypeApprovalAsked || ev.Type == session.TypeApprovalDecided {
			out = append(out, ev.Type+" "+string(ev.Data))
		}
	}
	return out
}

func asked(id, tool, callID, reason string) string {
	b, _ := json.Marshal(map[string]string{"reason": reason})
	return session.TypeApprovalAsked + ` {"id":"` + id + `","toolName":"` + tool + `","callId":"` + callID + `",` + string(b[1:len(b)-1]) + `}`
}

func decided(id string, out approval.Outcome) string {
	return session.TypeApprovalDecided + ` {"id":"` + id + `","outcome":"` + string(out) + `"}`
}

func TestModeGate(t *testing.T) {
	const never = "never"
	outcomes := []approval.Outcome{approval.AllowedOnce, approval.AllowedAlways, approval.Rejected, approval.Cancelled, approval.Unavailable, never}
	for _, mode := range []string{"read-only", "workspace-write", "danger-full-access"} {
		for _, inside := range []bool{true, false} {
			for _, op := range []Op{OpWrite, OpEdit, OpRead} {
				for _, out := range outcomes {
					name := mode + "/inside=" + strconv.FormatBool(inside) + "/" + string(op) + "/" + string(out)
					t.Run(name, func(t *testing.T) { checkGate(t, mode, inside, op, out) })
				}
			}
		}
	}
}

func checkGate(t *testing.T, mode string, inside bool, op Op, out approval.Outcome) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	root, away := filepath.Join(base, "root"), filepath.Join(base, "away")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.MkdirAll(away, 0o755))
	dir := root
	if !inside {
		dir = away
	}
	p := filepath.Join(dir, "f.txt")
	require.NoError(t, os.WriteFile(p, []byte("old\n"), 0o644))
	policy := approval.PolicyAsk
	if out == "never" {
		policy = approval.PolicyNever
	}
	g := newGated(t, root, mode, policy, out)

	// The read an overwrite or edit needs first (outside the root, it is
	// gated too: record it directly to keep this case about the write).
	if op != OpRead {
		info, err := g.files.unconfined().Stat(context.Background(), p)
		require.NoError(t, err)
		g.files.policy.observe(info.ID, info.Version)
	}
	var res capabilities.Outcome
	switch op {
	case OpWrite:
		res = g.call("write", map[string]any{"file_path": p, "content": "new\n"})
	case OpEdit:
		res = g.call("edit", map[string]any{"file_path": p, "old_string": "old", "new_string": "new"})
	case OpRead:
		res = g.call("read", map[string]any{"file_path": p})
	}
	callID := "call_" + strconv.Itoa(g.calls)

	writes := op != OpRead
	mustAsk := mode != "danger-full-access" && (!inside || (writes && mode == "read-only"))
	allowed := !mustAsk || out == approval.AllowedOnce || out == approval.AllowedAlways

	got, err := os.ReadFile(p)
	require.NoError(t, err)
	switch {
	case allowed && writes:
		require.False(t, res.IsError, text(res))
		require.Equal(t, "new\n", string(got))
	case allowed:
		require.Equal(t, readText(p, "1: old", "(End of file - total 1 lines)"), text(res))
	default:
		require.True(t, res.IsError)
		require.Nil(t, res.Error, "a refusal is a plain error")
		require.Equal(t, "old\n", string(got), "a refused write changes nothing")
	}

	if !mustAsk {
		require.Empty(t, g.approvals(), "nobody is asked")
		require.Empty(t, g.answers.seen)
		return
	}
	why := "it is outside the session root " + root
	switch {
	case writes && mode == "read-only" && inside:
		why = "the sandbox is read-only"
	case writes && mode == "read-only":
		why = "the sandbox is read-only and " + why
	}
	reason := string(op) + ` "` + p + `": ` + why
	decidedAs := out
	if out == "never" {
		decidedAs = approval.Rejected
	}
	require.Equal(t, []string{asked("ap1", string(op), callID, reason), decided("ap1", decidedAs)}, g.approvals())
	if out == "never" {
		require.Empty(t, g.answers.seen, "the policy answers, nobody is asked")
	} else {
		want := approval.Request{ToolName: string(op), CallID: callID, Reason: reason, Scope: approval.ScopeWrites, Action: string(op) + " " + p}
		if !inside {
			want.Scope, want.Subject = approval.ScopeFolder, filepath.Dir(p)
		}
		require.Equal(t, []approval.Request{want}, g.answers.seen, "what an always would cover is said")
	}
	prefix := "Error: cannot " + string(op) + ` "` + p + `": ` + why
	switch out {
	case approval.Rejected, "never":
		require.Equal(t, prefix+`; approval was refused (by the user, or by the approval policy "never")`, text(res))
	case approval.Cancelled:
		require.Equal(t, prefix+"; the approval request was cancelled", text(res))
	case approval.Unavailable:
		require.Equal(t, prefix+", and no approval channel is available", text(res))
	}
	if out != approval.AllowedAlways {
		require.Empty(t, g.remember)
		return
	}
	// "Always": the same kind of access no longer asks.
	if writes && mode == "read-only" {
		require.Equal(t, []string{"workspace-write"}, g.remember, "the session widens to workspace-write")
	} else {
		require.Empty(t, g.remember)
	}
	n := len(g.approvals())
	sibling := filepath.Join(dir, "g.txt")
	if writes {
		require.False(t, g.call("write", map[string]any{"file_path": sibling, "content": "g"}).IsError)
		require.FileExists(t, sibling)
	} else {
		require.NoError(t, os.WriteFile(sibling, []byte("g\n"), 0o644))
		require.False(t, g.call("read", map[string]any{"file_path": sibling}).IsError)
	}
	require.Len(t, g.approvals(), n, "no second question")
	if !inside {
		// Only that directory: a subdirectory asks again.
		deeper := filepath.Join(dir, "sub", "h.txt")
		g.answers.out = approval.Rejected
		require.True(t, g.call("write", map[string]any{"file_path": deeper, "content": "h"}).IsError)
		require.NoFileExists(t, deeper)
		require.Len(t, g.approvals(), n+2)
	}
}

func TestModeGateWithoutApprover(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	root := filepath.Join(base, "root")
	require.NoError(t, os.MkdirAll(root, 0o755))
	mode := "read-only"
	h := &harness{t: t, dir: root, env: newEnv(root)}
	h.tools = New(Options{Confine: true, Gate: &ModeGate{Mode: func(*capabilities.Call) string { return mode }}})
	h.reg = capabilities.NewRegistry(h.tools...)
	h.files = h.tools[0].(*readTool).files

	p := filepath.Join(root, "f.txt")
	h.fails("write", map[string]any{"file_path": "f.txt", "content": "x"}, `cannot write "`+p+`": the sandbox is read-only (no approval service to ask)`, "")
	require.NoFileExists(t, p)
	mode = "workspace-write"
	h.ok("write", map[string]any{"file_path": "f.txt", "content": "x"})
	outside := filepath.Join(base, "away.txt")
	h.fails("write", map[string]any{"file_path": outside, "content": "x"}, `refusing to access "`+outside+`": it resolves outside the session root `+root, CodeOutsideRoot)
	require.NoFileExists(t, outside)
	mode = "unknown"
	h.fails("write", map[string]any{"file_path": "f.txt", "content": "y"}, `cannot write "`+p+`": the sandbox is read-only (no approval service to ask)`, "")
	mode = "danger-full-access"
	h.ok("write", map[string]any{"file_path": outside, "content": "x"})
	require.FileExists(t, outside)
}

// TestModeGateRechecksAfterAsking: a file changed while the user was
// deciding is not clobbered.
func TestModeGateRechecksAfterAsking(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	g := newGated(t, root, "read-only", approval.PolicyAsk, approval.AllowedOnce)
	p := g.writeFile("f.txt", "one\n")
	g.ok("read", map[string]any{"file_path": "f.txt"})
	var once sync.Once
	gate := g.files.opts.Gate.(*ModeGate)
	gate.Approver = approverFunc(func(ctx context.Context, log *session.Log, req approval.Request) (approval.Outcome, error) {
		once.Do(func() { touch(t, p, "human edit\n") })
		return approval.AllowedOnce, nil
	})
	g.fails("write", map[string]any{"file_path": "f.txt", "content": "model\n"}, `cannot write "`+p+`": file changed since it was read`, CodeStaleVersion)
	require.Equal(t, "human edit\n", g.readFile("f.txt"))
}

type approverFunc func(ctx context.Context, log *session.Log, req approval.Request) (approval.Outcome, error)

func (f approverFunc) Request(ctx context.Context, log *session.Log, req approval.Request) (approval.Outcome, error) {
	return f(ctx, log, req)
}
