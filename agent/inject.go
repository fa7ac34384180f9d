package agent

import (
	"context"

	"github.com/dsh-acp/dsh-acp/session"
)

// Inject tells the model something that happened outside its requests (a
// background task finished): a context/message appended into the open
// turn, or, when the session is idle, a one-shot injection turn
// (turn/start trigger "injection", context/message, turn/end completed).
func (s *Session) Inject(source session.Source, text string) {
	msg := session.Message{Content: []session.Block{session.TextBlock(text)}, Source: source}
	s.mu.Lock()
	if s.inTurn {
		s.log.Append(session.TypeContextMessage, msg)
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
	turn := session.LastTurn(s.log.Events()) + 1
	s.log.Append(session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: "injection", Source: source}})
	s.log.Append(session.TypeContextMessage, msg)
	s.log.Append(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: session.EndReason{Kind: session.EndCompleted}})
	if err := s.log.Flush(context.Background()); err != nil {
		s.rt.cfg.Log.Error().Err(err).Str("session", s.ID()).Msg("persist injection")
	}
}
