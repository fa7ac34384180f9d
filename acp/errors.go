package acp

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// Error is a JSON-RPC error object. Every error a handler returns is mapped
// to one by toError, the single place where Go errors become wire codes.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// JSON-RPC error codes used on the wire.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
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

// toError maps any handler error to its wire form: *Error as is; any other
// error becomes -32603 "Internal error" with data {"details": message} (or
// the message itself when it is JSON, or {} when empty).
func toError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
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
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

func errorFrame(id json.RawMessage, e *Error) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	return jsonx.MustMarshal(errorResponseFrame{"2.0", id, e})
}
