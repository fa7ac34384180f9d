package agent

import (
	"context"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// Dispatch runs one tool call on behalf of another (capabilities.Dispatcher)
// on the path the loop runs a model's call (Session.run): the pre-execute
// chain, the tool or the approval path, the post-execute chain. Nothing is
// logged for it here (the caller logs its own record, e.g.
// tool/code-dispatch). The call belongs to the turn and step of
// parentCallID. Context a post-execute member adds for it is appended
// after the step's results like any other call's.
func (s *Session) Dispatch(ctx context.Context, parentCallID, callID, name, arguments string) capabilities.Outcome {
	turn, step := session.CallRef(s.log.Events(), parentCallID)
	c := newPendingCall(turn, step, callID, name, arguments)
	s.run(ctx, []*pendingCall{c}, nil)
	if extra := c.extra; extra != nil && len(extra.Content) > 0 {
		s.mu.Lock()
		s.injected = append(s.injected, session.Message{Content: extra.Content, Source: extra.Source})
		s.mu.Unlock()
	}
	return c.out
}
