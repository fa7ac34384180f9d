package bash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
)

// Confiner wraps an argv so it runs confined (sandbox.Provider).
type Confiner interface {
	Confine(ctx context.Context, argv []string, p sandbox.Policy) (sandbox.Confined, error)
}

// Approver asks the user to approve an escalation (approval.Service).
type Approver interface {
	Request(ctx context.Context, log *session.Log, req approval.Request) (approval.Outcome, error)
}

// Sandboxing confines every foreground command (sandbox-approval-modes
// §§ 2–5). With it, bash advertises sandbox_permissions + justification.
type Sandboxing struct {
	// Confiner wraps the command for the chosen backend.
	Confiner Confiner
	// Root returns the writable workspace root for a call.
	Root func(call *capabilities.Call) string
	// Mode returns the session's effective mode (its knob: last
	// bash/sandbox-mode event, else the default).
	Mode func(call *capabilities.Call) string
	// Approver asks for escalations (nil: no approval service composed).
	Approver Approver
	// Remember, when set, makes an "always allow" answer stick: the
	// session's mode becomes the granted one.
	Remember func(call *capabilities.Call, mode string)
	// SessionTmp gives the session one private /tmp for its confined
	// commands (sandbox.Policy.TmpDir): a directory created on first use
	// beneath TmpBase, kept across the session's commands, removed when the
	// tool closes. Off, each backend keeps its default /tmp.
	SessionTmp bool
	// TmpBase is where session temp dirs are created; empty means
	// os.TempDir().
	TmpBase string
	// Contain, when set, returns the containment of the session's confined
	// commands; bash then also advertises `network`, a one-call request
	// for network access. Nil contains nothing (upstream's argv).
	Contain func(call *capabilities.Call) Containment
	// RememberNetwork, when set, makes an "always allow" answer to a
	// network request stick: the session's Network option turns on.
	RememberNetwork func(call *capabilities.Call)
}

// EscalationMarker tells the model a denied command may be retried with
// an escalation.
const EscalationMarker = "[sandbox: escalation available — retry this exact command once with sandbox_permissions " +
	"(the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"

// wider lists the modes strictly wider than m.
func wider(m string) []string {
	switch sandbox.Mode(m) {
	case sandbox.ReadOnly:
		return []string{string(sandbox.WorkspaceWrite), string(sandbox.DangerFullAccess)}
	case sandbox.WorkspaceWrite:
		return []string{string(sandbox.DangerFullAccess)}
	}
	return nil
}

// effectiveMode resolves this call's mode: an approved escalation, else the
// session's mode. A refused escalation is an error and nothing runs.
func (sb *Sandboxing) effectiveMode(ctx context.Context, call *capabilities.Call, a args) (string, error) {
	cur := sb.Mode(call)
	if len(a.SandboxPermissions) == 0 {
		return cur, nil
	}
	var want, why string
	_ = json.Unmarshal(a.SandboxPermissions, &want)
	_ = json.Unmarshal(a.Justification, &why)
	ok := false
	for _, w := range wider(cur) {
		ok = ok || w == want
	}
	if !ok {
		return "", fmt.Errorf("sandbox escalation to %q is not strictly wider than this call's current %q mode", want, cur)
	}
	if sb.Approver == nil {
		return "", fmt.Errorf("sandbox escalation to %q requires approval, but no approval service is composed", want)
	}
	if call.Session == nil || call.Session.Log() == nil {
		return "", fmt.Errorf("sandbox escalation to %q requires approval, but the call has no agent to route it through", want)
	}
	out, err := sb.Approver.Request(ctx, call.Session.Log(), approval.Request{ToolName: "bash", CallID: call.CallID,
		Reason: "escalate sandbox to " + want + ": " + why, Scope: approval.ScopeSandbox, Subject: want, Detail: why, Action: a.Command})
	if err != nil {
		return "", err
	}
	switch out {
	case approval.AllowedOnce:
		return want, nil
	case approval.AllowedAlways:
		if sb.Remember != nil {
			sb.Remember(call, want)
		}
		return want, nil
	case approval.Rejected:
		return "", fmt.Errorf("the user rejected escalating this command to %q", want)
	case approval.Cancelled:
		return "", fmt.Errorf("approval for escalating to %q was cancelled", want)
	}
	return "", fmt.Errorf("sandbox escalation to %q requires approval, but no approval channel is available", want)
}

// confinement is how one run is confined, and how its failure is read.
type confinement struct {
	mode     string
	confined sandbox.Confined
}

// markers are the result markers of a classified run: a file denial and
// its escalation hint, a refused connection and its own.
func (c *confinement) markers(v sandbox.Verdict) []string {
	var out []string
	if v.Denied {
		out = append(out, sandbox.Marker(sandbox.Mode(c.mode)), EscalationMarker)
	}
	if v.NetDenied {
		out = append(out, sandbox.NetMarker(sandbox.Mode(c.mode)), NetEscalationMarker)
	}
	return out
}

// tripped runs the run's tripwire (sandbox.Confined.Tripwire) and returns
// its markers: the file-denial marker (unless denied says the result has
// it already) and what was put back. Nil when nothing was.
func (c *confinement) tripped(denied bool) []string {
	if c == nil {
		return nil
	}
	paths := c.confined.Tripwire.Check()
	if len(paths) == 0 {
		return nil
	}
	var out []string
	if !denied {
		out = append(out, sandbox.Marker(sandbox.Mode(c.mode)))
	}
	return append(out, sandbox.ProtectedMarker(paths))
}

// prepare confines the command of sp for mode; danger-full-access runs it
// unwrapped. The session's extra workspace roots (Host.Roots) are writable
// like the root under workspace-write. tmp is the session's temp dir, used
// when SessionTmp is set. Unavailability is a coded
// SandboxUnavailableError.
func (sb *Sandboxing) prepare(ctx context.Context, call *capabilities.Call, sp *spec, mode string, cont Containment, tmp *sessionTmp) (*confinement, error) {
	if mode == string(sandbox.DangerFullAccess) {
		return nil, nil
	}
	policy := sandbox.Policy{Mode: sandbox.Mode(mode), WorkspaceRoot: sb.Root(call),
		ExtraRoots: capabilities.HostOf(call.Session).Roots,
		NoNetwork:  cont.NoNetwork, Hidden: cont.Hidden, Protected: cont.Protected, Quarantine: cont.Quarantine}
	if sb.SessionTmp {
		dir, err := tmp.path()
		if err != nil {
			return nil, err
		}
		policy.TmpDir = dir
	}
	c, err := sb.Confiner.Confine(ctx, []string{"bash", "-c", sp.command}, policy)
	if err != nil {
		return nil, unavailable(err)
	}
	sp.command = sandbox.ExecLine(c.Argv)
	sp.setup, sp.confined = c.Setup, true
	conf := &confinement{mode: mode, confined: c}
	sp.withoutSetup = func() { conf.confined = conf.confined.WithoutSetup() }
	return conf, nil
}

// unavailable maps a sandbox error to the coded tool error.
func unavailable(err error) error {
	var ue *sandbox.UnavailableError
	if errors.As(err, &ue) {
		return &capabilities.CodedError{Name: ue.Name(), Code: ue.Code(), Message: ue.Error()}
	}
	return err
}
