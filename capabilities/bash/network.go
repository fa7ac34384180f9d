package bash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// Containment is what a session's confined commands are kept from beyond
// the sandbox mode's file writes (the default composition): the network,
// secrets, and files that run code later (sandbox.Policy's NoNetwork,
// Hidden and Protected).
type Containment struct {
	// NoNetwork cuts confined commands off the network (the Network
	// option off); a command may ask for it for one call.
	NoNetwork bool
	// Hidden are paths confined commands cannot read.
	Hidden []string
	// Protected are paths confined commands cannot change.
	Protected []string
	// Quarantine is where the sandbox's tripwire keeps what it put back
	// (sandbox.Policy.Quarantine).
	Quarantine string
}

// NetEscalationMarker tells the model a command refused the network may be
// retried with network access for one call.
const NetEscalationMarker = "[sandbox: network escalation available — if this command really needs the network, retry this " +
	"exact command once with network: true + justification; the approval prompt asks the user]"

// errNoJustification is the check error of a network request without a
// justification.
var errNoJustification = errors.New("invalid escalation: network requires a justification")

// wantsNetwork reports whether the call asks for network access.
func (a args) wantsNetwork() bool {
	var on bool
	return len(a.Network) > 0 && json.Unmarshal(a.Network, &on) == nil && on
}

// containment resolves this call's containment: the session's, with the
// network opened when the call asked for it and the user agreed. A refused
// request is an error and nothing runs. Unconfined modes contain nothing.
func (sb *Sandboxing) containment(ctx context.Context, call *capabilities.Call, a args, mode string) (Containment, error) {
	if sb.Contain == nil || mode == string(sandbox.DangerFullAccess) {
		return Containment{}, nil
	}
	c := sb.Contain(call)
	if !c.NoNetwork || !a.wantsNetwork() {
		return c, nil
	}
	if sb.Approver == nil || call.Session == nil || call.Session.Log() == nil {
		return c, errors.New("network access requires approval, but no approval channel is available")
	}
	var why string
	_ = json.Unmarshal(a.Justification, &why)
	out, err := sb.Approver.Request(ctx, call.Session.Log(), approval.Request{ToolName: "bash", CallID: call.CallID,
		Reason: "run `" + a.Command + "` with network access: " + why, Scope: approval.ScopeNetwork, Subject: a.Command, Action: a.Command, Detail: why})
	if err != nil {
		return c, err
	}
	switch out {
	case approval.AllowedAlways:
		if sb.RememberNetwork != nil {
			sb.RememberNetwork(call)
		}
		fallthrough
	case approval.AllowedOnce:
		c.NoNetwork = false
		return c, nil
	case approval.Rejected:
		return c, errors.New("the user rejected running this command with network access")
	case approval.Cancelled:
		return c, errors.New("approval for network access was cancelled")
	}
	return c, fmt.Errorf("network access requires approval, but no approval channel is available")
}
