package main

import (
	"context"
	"iter"
	"sync"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/agent/llm"
)

// missingKey is the provider served when no API key is there: every model
// call fails at once with a message saying how to provide one.
type missingKey struct{ env string }

func (m missingKey) Stream(context.Context, *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		yield(llm.Chunk{}, &llm.Error{
			Message: "no API key: sign in (dsh-acp --login in a terminal), or set " + m.env + " in the environment dsh-acp runs in (for Zed: the \"env\" of the agent_servers entry)",
			Code:    "AUTH",
		})
	}
}

// signedIn serves the key stored by --login, looked up at each model call:
// a provider per key in effect (rebuilt when the key changes), missingKey
// while there is none.
type signedIn struct {
	keys keys
	live func(key string) llm.Provider
	log  zerolog.Logger

	mu       sync.Mutex
	key      string
	provider llm.Provider
}

// current is the provider for the key in effect now.
func (s *signedIn) current() llm.Provider {
	key, _, err := s.keys.key()
	if err != nil {
		s.log.Warn().Err(err).Msg("the stored API key is not usable")
	}
	if key == "" {
		return missingKey{env: s.keys.env}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.provider == nil || s.key != key {
		s.key, s.provider = key, s.live(key)
	}
	return s.provider
}

// Stream implements llm.Provider.
func (s *signedIn) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return s.current().Stream(ctx, req)
}

// Warm opens the connection ahead of the first prompt when a key is
// stored (agent.NewRuntime calls it).
func (s *signedIn) Warm(ctx context.Context) {
	if w, ok := s.current().(interface{ Warm(context.Context) }); ok {
		w.Warm(ctx)
	}
}
