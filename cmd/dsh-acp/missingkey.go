package main

import (
	"context"
	"iter"

	"github.com/dsh-acp/dsh-acp/agent/llm"
)

// missingKey is the provider served when no API key is set: every model
// call fails at once with a message naming the variable to set.
type missingKey struct{ env string }

func (m missingKey) Stream(context.Context, *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		yield(llm.Chunk{}, &llm.Error{
			Message: "no API key: set " + m.env + " in the environment dsh-acp runs in (for Zed: the \"env\" of the agent_servers entry)",
			Code:    "AUTH",
		})
	}
}
