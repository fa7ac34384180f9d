package capabilities

import (
	"context"

	"github.com/dsh-acp/dsh-acp/session"
)

// Spawner is implemented by a calling session that can start child agents
// (subagents and workflow children). A tool finds it in its session's
// Host; agent.Session implements it.
type Spawner interface {
	// Spawn starts a child agent: a full agent with the parent's prompt
	// assembly and tools, its own log beside the parent's (header
	// parentSession, and seedLength for a fork). The child is idle until
	// prompted; the caller closes it.
	Spawn(ctx context.Context, o ChildOptions) (Child, error)
}

// ChildOptions configure a child agent.
type ChildOptions struct {
	// Fork seeds the child with the parent's completed turns: its log
	// starts with the parent's events through the last turn/end.
	Fork bool
	// Model overrides the parent's model ("" keeps it).
	Model string
	// Extra tools are offered to this child only, after its registry's
	// tools (structured_output).
	Extra []Tool
	// Members join the child's turn pipeline after the composition's
	// (pipeline members: gates, continuers).
	Members []any
	// Title is how an editor that shows child sessions names this one
	// (the delegated task's description); empty leaves it to the editor.
	Title string
}

// CodeDelegationLimit is the end code of a child's turn stopped by a
// session's delegation ceiling (its model-call budget for the turn); the
// end's message says which, and a child run reports it to the model.
const CodeDelegationLimit = "DELEGATION_LIMIT"

// Child is a running child agent.
type Child interface {
	// ID is the child's session id.
	ID() string
	// Log is the child's event log.
	Log() *session.Log
	// Prompt runs one turn for text (a user message) and returns how it
	// ended.
	Prompt(ctx context.Context, text string) session.EndReason
	// Close disposes the child: its loop stops and its log is flushed.
	Close(ctx context.Context) error
}
