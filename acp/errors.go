package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// Error is a JSON-RPC error object. Every error a handler returns is mapped
// to one by toError, the single place where Go errors become wire codes.
type Error struct {
	Code    ErrorCode       `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// ErrorCode is a JSON-RPC error code.
type ErrorCode int64

// JSON-RPC error codes used on the wire.
const (
	CodeParseError     ErrorCode = -32700
	CodeInvalidRequest ErrorCode = -32600
	CodeMethodNotFound ErrorCode = -32601
	CodeInvalidParams  ErrorCode = -32602
	CodeInternalError  ErrorCode = -32603
)

// invalidParams is the bridge's "Invalid params: <detail>" error.
func invalidParams(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidParams, Message: "Invalid params: " + fmt.Sprintf(format, args...)}
}

// internalError is the bridge's "Internal error: <detail>" error.
func internalError(format string, args ...any) *Error {
	return &Error{Code: CodeInternalError, Message: "Internal error: " + fmt.Sprintf(format, args...)}
}

// errDisposed answers state-changing requests after teardown.
func errDisposed() *Error { return internalError("the ACP bridge has been disposed") }

// unknownSession refuses a request naming no live session.
func unknownSession(id string) *Error { return invalidParams("unknown session: %s", id) }

func methodNotFound(method string) *Error {
	return &Error{Code: CodeMethodNotFound, Message: `"Method not found": ` + method,
		Data: jsonx.MustMarshal(struct {
			Method string `json:"method"`
		}{method})}
}

// badParams reports params that do not decode into the method's shape.
func badParams(err error) *Error {
	return &Error{Code: CodeInvalidParams, Message: "Invalid params", Data: detailsData(err.Error())}
}

// toError maps any handler error to its wire form: *Error as is; a knob id
// the session does not have or a value its knob does not allow
// (agent.UnknownKnobError, agent.KnobValueError) is -32602 naming it; any other
// error becomes -32603 "Internal error" with data {"details": message} (or
// the message itself when it is JSON, or {} when empty).
func toError(err error) *Error {
	var (
		e       *Error
		unknown *agent.UnknownKnobError
		value   *agent.KnobValueError
	)
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &unknown):
		id, _ := marshal(unknown.ID)
		return invalidParams("unknown config option %s", id)
	case errors.As(err, &value):
		v, _ := marshal(value.Value)
		return invalidParams("unknown %s value %s", value.ID, v)
	}
	msg := err.Error()
	out := &Error{Code: CodeInternalError, Message: "Internal error"}
	switch {
	case msg == "":
		out.Data = json.RawMessage("{}")
	case json.Valid([]byte(msg)):
		out.Data, _ = jsonx.Compact([]byte(msg))
	default:
		out.Data = detailsData(msg)
	}
	return out
}

func detailsData(msg string) json.RawMessage {
	return jsonx.MustMarshal(struct {
		Details string `json:"details"`
	}{msg})
}

type responseFrame struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
}

type errorResponseFrame struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *Error          `json:"error"`
}

type notificationFrame struct {
	JSONRPC string `json:"jsonrpc"`
	Method  Method `json:"method"`
	Params  any    `json:"params"`
}

func errorFrame(id json.RawMessage, e *Error) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	return jsonx.MustMarshal(errorResponseFrame{"2.0", id, e})
}

// CodeResourceNotFound is ACP's resource_not_found: a session (or file)
// that does not exist.
const CodeResourceNotFound ErrorCode = -32002

// turnFailed answers a prompt whose turn ended in error. Upstream's form is
// "Internal error: turn failed: <message>" (acp-bridge § 5); with
// ClearErrors the message says what failed and what to do about it, and
// data carries the error code and step.
func (s *Server) turnFailed(r session.EndReason) *Error {
	if !s.opts.ClearErrors {
		return internalError("turn failed: %s", r.Message)
	}
	return &Error{Code: CodeInternalError, Message: failureText(r), Data: jsonx.MustMarshal(struct {
		Code string `json:"code,omitempty"`
		Step int    `json:"step,omitempty"`
	}{r.Code, r.Step})}
}

// failureText is "<what failed>: <message>. <what to do>".
func failureText(r session.EndReason) string {
	what, hint := "The turn failed", r.Hint
	switch r.Code {
	case "AUTH", "RATE_LIMIT", "SERVER", "INVALID_REQUEST", "EMPTY_RESPONSE", "MALFORMED_RESPONSE",
		"STREAM_CLOSED", "TIMEOUT", "NETWORK", "ABORTED":
		what = "The model call failed"
	default:
		if strings.HasPrefix(r.Code, "HTTP_") {
			what = "The model call failed"
		}
	}
	if hint == "" {
		hint = defaultHint(r.Code)
	}
	msg := strings.TrimSpace(r.Message)
	if msg == "" {
		msg = "no reason was given"
	}
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	if hint != "" {
		msg += " " + hint
	}
	return what + ": " + msg
}

// defaultHint says what to do about an error code when the error brought
// no hint of its own.
func defaultHint(code string) string {
	const again = "send the prompt again"
	switch {
	case code == "AUTH":
		return "Check the API key dsh-acp runs with, then " + again + "."
	case code == "RATE_LIMIT":
		return "The provider is rate limiting: wait a minute, then " + again + "."
	case code == "SERVER" || strings.HasPrefix(code, "HTTP_5"):
		return "The provider's servers are failing: try again in a few minutes."
	case code == "INVALID_REQUEST" || strings.HasPrefix(code, "HTTP_4"):
		return "Check the model name and the model settings in the dsh-acp config."
	case code == "STREAM_CLOSED" || code == "ABORTED" || code == "TIMEOUT" || code == "NETWORK":
		return "Check the network connection, then " + again + "."
	case code == "STEP_LIMIT" || code == "INVALID_HISTORY":
		return "" // their message says what to do
	}
	return "If it keeps failing, dsh-acp's log (stderr) has the details; " + again + "."
}

// notSaved answers a prompt whose turn ran but whose events could not be
// made durable: the session log lacks them, so the answer must not claim
// the turn ended normally.
func notSaved(err error) *Error {
	return internalError("the turn's events could not be saved to the session log (%v); what the agent did in this turn may be lost when the session is loaded again — start a new session if this persists", err)
}
