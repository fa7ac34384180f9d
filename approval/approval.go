// Package approval is the seam through which a tool asks the user before
// doing something risky. A request always resolves to one Outcome, never an
// error; both the question and the decision are recorded in the session log
// (approval/asked, approval/decided).
package approval

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-acp/dsh-acp/session"
)

// Outcome is how an approval request resolved.
type Outcome string

// Outcomes.
const (
	AllowedOnce Outcome = "allowed-once"
	// AllowedAlways grants this request and tells the caller to stop asking
	// for the same kind of request in this session (offered only outside
	// the upstream-mirroring compositions).
	AllowedAlways Outcome = "allowed-always"
	Rejected      Outcome = "rejected"
	Cancelled     Outcome = "cancelled"
	Unavailable   Outcome = "unavailable"
)

// Policy is an approval policy: whether permission requests reach the user
// (sandbox-approval-modes.md § 2).
type Policy string

// The approval policies.
const (
	// PolicyAsk asks the user (through the answerers) for each request.
	PolicyAsk Policy = "ask"
	// PolicyNever rejects every request without asking.
	PolicyNever Policy = "never"
)

// Policies returns the approval policies in menu order.
func Policies() []Policy { return []Policy{PolicyAsk, PolicyNever} }

// Valid reports whether p is one of the approval policies.
func (p Policy) Valid() bool { return p == PolicyAsk || p == PolicyNever }

// Request is one thing a tool wants approved.
type Request struct {
	ToolName string
	CallID   string
	// Reason is what is asked, as logged (approval/asked) and as the
	// model's texts name it.
	Reason string
	// Scope and Subject say what an "always" answer covers, so that the
	// person asked can be told (the outcome does not depend on them):
	// for ScopeSandbox the mode asked for, ScopeFolder the folder, ScopeHost
	// the web host; Detail is the tool's own justification, if any.
	Scope   Scope
	Subject string
	Detail  string
	// Action is the concrete action asked about, however the call
	// arrived (directly, from run_code, from a child agent): the command
	// a sandbox escalation would run, the input of a call a hook sent to
	// ask. A permission prompt shows it, and a grant remembered for a
	// project is keyed on it, never on a card's title.
	Action string
}

// Scope is what an "always" answer to a Request would cover.
type Scope string

// The scopes tools ask with.
const (
	// ScopeCall: the tool's calls of this kind for the session (the
	// default).
	ScopeCall Scope = ""
	// ScopeSandbox: a command run under a wider sandbox mode (Subject);
	// "always" keeps the session at that mode.
	ScopeSandbox Scope = "sandbox"
	// ScopeWrites: file writes while the sandbox is read-only; "always"
	// widens the session to workspace-write.
	ScopeWrites Scope = "writes"
	// ScopeFolder: file changes in one folder (Subject) outside the
	// session's roots.
	ScopeFolder Scope = "folder"
	// ScopeHost: requests to one web host (Subject).
	ScopeHost Scope = "host"
	// ScopeNetwork: one sandboxed command (Subject) run with network
	// access; "always" turns the session's Network option on.
	ScopeNetwork Scope = "network"
)

// Answerer asks someone (the editor's user) to decide. It returns ok=false
// when it does not answer for this session, so the next answerer is asked.
type Answerer interface {
	Answer(ctx context.Context, sessionID string, req Request) (outcome Outcome, ok bool, err error)
}

// Service resolves approval requests for sessions.
type Service struct {
	answerers     []Answerer
	defaultPolicy Policy
	newID         func() string
}

// NewService returns a service with the composition's default policy.
func NewService(defaultPolicy Policy, newID func() string, answerers ...Answerer) *Service {
	return &Service{answerers: answerers, defaultPolicy: defaultPolicy, newID: newID}
}

// AddAnswerer appends an answerer to the chain.
func (s *Service) AddAnswerer(a Answerer) { s.answerers = append(s.answerers, a) }

// DefaultPolicy is the composition's policy before any switch.
func (s *Service) DefaultPolicy() Policy { return s.defaultPolicy }

// Policy returns the effective policy of a log: its last approval/policy
// event, else the default.
func (s *Service) Policy(events []session.Event) Policy {
	return Fold(events, s.defaultPolicy)
}

// Fold returns the last approval/policy in events, else def.
func Fold(events []session.Event, def Policy) Policy {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == session.TypeApprovalPolicy {
			var p struct {
				Policy Policy `json:"policy"`
			}
			if events[i].Decode(&p) == nil {
				return p.Policy
			}
		}
	}
	return def
}

// ErrNoOpenTurn is returned (a programming error) when a request is made
// outside a turn.
var ErrNoOpenTurn = errors.New("approval requested outside an open turn")

type asked struct {
	ID       string `json:"id"`
	ToolName string `json:"toolName"`
	CallID   string `json:"callId,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

type decided struct {
	ID      string  `json:"id"`
	Outcome Outcome `json:"outcome"`
}

// Request asks for approval on behalf of the session owning log. The
// policy "never" rejects without asking; an answerer that fails or gives an
// unknown answer yields Unavailable; cancelling ctx yields Cancelled.
func (s *Service) Request(ctx context.Context, log *session.Log, req Request) (Outcome, error) {
	if !session.TurnOpen(log.Events()) {
		return Unavailable, fmt.Errorf("%w (session %s)", ErrNoOpenTurn, log.ID())
	}
	id := s.newID()
	log.Append(session.TypeApprovalAsked, asked{ID: id, ToolName: req.ToolName, CallID: req.CallID, Reason: req.Reason})
	out := s.decide(ctx, log, req)
	log.Append(session.TypeApprovalDecided, decided{ID: id, Outcome: out})
	return out, nil
}

func (s *Service) decide(ctx context.Context, log *session.Log, req Request) Outcome {
	if ctx.Err() != nil {
		return Cancelled
	}
	if s.Policy(log.Events()) == PolicyNever {
		return Rejected
	}
	for _, a := range s.answerers {
		type answer struct {
			out Outcome
			ok  bool
			err error
		}
		ch := make(chan answer, 1)
		go func() {
			o, ok, err := a.Answer(ctx, log.ID(), req)
			ch <- answer{o, ok, err}
		}()
		select {
		case <-ctx.Done():
			return Cancelled
		case ans := <-ch:
			if ctx.Err() != nil {
				return Cancelled // the abort won; a late answer is discarded
			}
			if ans.err != nil {
				return Unavailable
			}
			if !ans.ok {
				continue
			}
			switch ans.out {
			case AllowedOnce, AllowedAlways, Rejected, Cancelled, Unavailable:
				return ans.out
			}
			return Unavailable
		}
	}
	return Unavailable
}

// NeverSection is the prompt text of the approval:policy section when the
// policy is never (empty otherwise).
const NeverSection = "Approval prompts are off in this session: anything that needs the user's approval is rejected " +
	"automatically, so do not ask for sandbox escalation (leave `sandbox_permissions` unset)."

// Narration returns the notice for a policy change the model has not been
// told about.
func Narration(told, current Policy, byUser bool) string {
	cause := "changed by the operator/config"
	if byUser {
		cause = "changed by the user"
	}
	return fmt.Sprintf("The approval policy changed from %q to %q (%s).", told, current, cause)
}
