package fs

import (
	"context"
	"errors"
	"path/filepath"
	"sync"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/sandbox"
	"github.com/dsh-acp/dsh-acp/session"
)

// Op is a file operation a Gate judges; its text is the tool's name.
type Op string

// Operations.
const (
	OpRead  Op = "read"
	OpWrite Op = "write"
	OpEdit  Op = "edit"
)

// Access is one file access a Gate decides on.
type Access struct {
	// Call is the tool call making it.
	Call *capabilities.Call
	// Op is what the call does to the file.
	Op Op
	// Path is the absolute display path.
	Path string
	// Root is the session root the path was judged against.
	Root string
	// Inside reports that the path lies beneath Root (symbolic links
	// resolved); outside paths are reached unconfined once allowed.
	Inside bool
	// Special, when set, says why this path inside a root asks although
	// the sandbox mode would let it go ahead (Options.Special): it holds
	// secrets, or it runs code later.
	Special string
}

// Gate decides whether a file access may go ahead. The tools consult it
// before every write and edit (after their own checks, right before the
// content is written) and before a read of a path outside the root (before
// anything is read there).
type Gate interface {
	// Check returns nil to let the access go ahead, else the error the
	// tool reports. asked reports that someone was asked, so time passed
	// and the caller checks the file again before writing.
	Check(ctx context.Context, a Access) (asked bool, err error)
}

// Approver asks the user to approve an access (approval.Service, which
// applies the session's approval policy and logs approval/asked and
// approval/decided).
type Approver interface {
	Request(ctx context.Context, log *session.Log, req approval.Request) (approval.Outcome, error)
}

// ModeGate makes the file tools obey the session's sandbox mode, like the
// shell:
//
//   - danger-full-access: every access goes ahead.
//   - workspace-write: anything inside the root goes ahead; outside it,
//     reads and writes ask. Allowed once, the call goes ahead (unconfined);
//     "always", the file's exact directory (not its subdirectories) is
//     remembered for the rest of the session, in this gate's memory only.
//   - read-only (and any unknown mode, failing safe): reads inside go
//     ahead, reads outside ask as above; writes and edits ask anywhere.
//     "Always" widens the session to workspace-write (Remember), and for a
//     path outside also remembers its directory.
//
// A refusal (the user's, or the approval policy "never"'s), a cancelled
// question and an unreachable user are plain errors; without an Approver
// the refusal is final (FS_OUTSIDE_ROOT for an outside path). Construct one
// per session, as the tools.
type ModeGate struct {
	// Mode returns the session's sandbox mode (a sandbox.Mode; an
	// unknown one reads as sandbox.ReadOnly).
	Mode func(call *capabilities.Call) string
	// Approver asks the user (nil: nobody to ask).
	Approver Approver
	// Remember, when set, widens the session's sandbox mode after an
	// "always allow" answer.
	Remember func(call *capabilities.Call, mode string)

	mu   sync.Mutex      // guards dirs
	dirs map[string]bool // directories outside the root, and special paths, allowed for the session
}

var _ Gate = (*ModeGate)(nil)

// Check implements Gate.
func (g *ModeGate) Check(ctx context.Context, a Access) (bool, error) {
	mode := sandbox.ReadOnly
	if g.Mode != nil {
		mode = sandbox.Mode(g.Mode(a.Call))
	}
	writes := a.Op != OpRead
	readOnly := writes && mode != sandbox.WorkspaceWrite && mode != sandbox.DangerFullAccess
	switch {
	case mode == sandbox.DangerFullAccess:
		return false, nil
	case a.Special != "" && g.remembered(a.Path):
		return false, nil
	case a.Inside && !readOnly && a.Special == "":
		return false, nil
	case !a.Inside && !readOnly && g.remembered(filepath.Dir(a.Path)):
		return false, nil
	}
	why := "it is outside the session root " + a.Root
	switch {
	case a.Special != "":
		why = a.Special
	case readOnly && a.Inside:
		why = "the sandbox is read-only"
	case readOnly:
		why = "the sandbox is read-only and " + why
	}
	refuse := func(tail string) error {
		return errors.New("cannot " + string(a.Op) + " " + quote(a.Path) + ": " + why + tail)
	}
	if g.Approver == nil {
		if !a.Inside {
			return false, outsideRoot(a.Path, a.Root)
		}
		return false, refuse(" (no approval service to ask)")
	}
	if a.Call == nil || a.Call.Session == nil || a.Call.Session.Log() == nil {
		return false, refuse(", and the call has no session to ask through")
	}
	req := approval.Request{ToolName: string(a.Op), CallID: a.Call.CallID, Reason: string(a.Op) + " " + quote(a.Path) + ": " + why,
		Scope: approval.ScopeWrites, Action: string(a.Op) + " " + a.Path}
	switch {
	case a.Special != "":
		req.Scope = approval.ScopeCall
	case !a.Inside:
		req.Scope, req.Subject = approval.ScopeFolder, filepath.Dir(a.Path)
	}
	out, err := g.Approver.Request(ctx, a.Call.Session.Log(), req)
	if err != nil {
		return true, refuse(", and approval failed: " + err.Error())
	}
	switch out {
	case approval.AllowedOnce:
		return true, nil
	case approval.AllowedAlways:
		if a.Special != "" {
			g.remember(a.Path) // this one path, for the session
			return true, nil
		}
		if readOnly && g.Remember != nil {
			g.Remember(a.Call, string(sandbox.WorkspaceWrite))
		}
		if !a.Inside {
			g.remember(filepath.Dir(a.Path))
		}
		return true, nil
	case approval.Rejected:
		return true, refuse("; approval was refused (by the user, or by the approval policy \"never\")")
	case approval.Cancelled:
		return true, refuse("; the approval request was cancelled")
	}
	return true, refuse(", and no approval channel is available")
}

// remembered reports whether dir was allowed for the session.
func (g *ModeGate) remembered(dir string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dirs[dir]
}

// remember allows dir for the session.
func (g *ModeGate) remember(dir string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dirs == nil {
		g.dirs = map[string]bool{}
	}
	g.dirs[dir] = true
}
