package llm

import (
	"context"
	"encoding/json"
	"errors"
	"iter"

	"github.com/dsh-acp/dsh-acp/session"
)

// ToolSchema is one tool as the model sees it.
type ToolSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Config is the request configuration recorded in request headers.
type Config struct {
	Model       string   `json:"model"`
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   *int     `json:"maxTokens,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	// Thinking, when set, switches the model's thinking ("enabled" or
	// "disabled"); empty leaves the provider's default.
	Thinking string `json:"thinking,omitempty"`
}

// Message is one history message derived from the log.
type Message struct {
	Role    string // "user" or "assistant"
	Content []session.Block
}

// Request is one model call.
type Request struct {
	// SessionID identifies the calling session (the replay provider binds
	// scripts by it).
	SessionID string
	Config    Config
	System    string
	Tools     []ToolSchema
	Messages  []Message
}

// Provider streams one model call. The sequence ends after a finish chunk
// or with a non-nil error; cancelling ctx aborts the call.
type Provider interface {
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}

// Error is a failed model call with a machine-readable code (AUTH,
// RATE_LIMIT, INVALID_REQUEST, SERVER, HTTP_<status>, STREAM_CLOSED,
// TIMEOUT, NETWORK, ...).
type Error struct {
	// Message says what failed; it is what Error returns and what the
	// session log records.
	Message string
	Code    string
	Status  int
	// Hint, when non-empty, is one or two sentences telling the user what
	// to do about the failure (check a key, wait, send the prompt again).
	// It is for display next to Message, never a replacement for it.
	Hint string
	// Err is the underlying cause, if any (a transport error, a timeout).
	Err error
}

// Error returns Message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying cause, or nil.
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the code of an *Error in err's chain, or "".
func ErrorCode(err error) string {
	var le *Error
	if errors.As(err, &le) {
		return le.Code
	}
	return ""
}
