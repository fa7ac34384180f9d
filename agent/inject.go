package agent

import (
	"context"

	"github.com/dsh-acp/dsh-acp/session"
)

// Inject tells the model something that happened outside its requests (a
// background task finished). During a turn the context/message is queued
// and appended at the next step boundary (before the next model call, or
// before turn/end), never between a tool call and its results; when the
// session is idle it is a one-shot injection turn (turn/start trigger
// "injection", context/message, turn/end completed).
func (s *Session) Inject(source session.Source, text string) {
	s.inject(session.Message{Content: []session.Block{session.TextBlock(text)}, Source: source})
}

// inject is Inject for a whole message.
func (s *Session) inject(msg session.Message) {
	s.mu.Lock()
	if s.inTurn {
		s.injected = append(s.injected, msg)
		s.mu.Unlock()
		return
	}
	disposed := s.disposed
	s.mu.Unlock()
	if disposed {
		return
	}
	s.turnMu.Lock()
	defer s.turnMu.Unlock()
	turn := s.log.LastTurn() + 1
	s.log.Append(session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: session.TriggerInjection, Source: msg.Source}})
	s.log.Append(session.TypeContextMessage, msg)
	s.log.Append(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: session.EndReason{Kind: session.EndCompleted}})
	if err := s.log.Flush(context.Background()); err != nil {
		s.rt.cfg.Log.Error().Err(err).Str("session", s.ID()).Msg("persist injection")
	}
}

// takeInjected empties the injection queue; s.mu is held.
func (s *Session) takeInjected() []session.Message {
	q := s.injected
	s.injected = nil
	return q
}

// appendInjected appends queued context messages in arrival order.
func (s *Session) appendInjected(q []session.Message) {
	for _, m := range q {
		s.log.Append(session.TypeContextMessage, m)
	}
}
