package acp

// This file is the only one that knows sourcegraph/jsonrpc2 exists. The
// rest of the package speaks through conn (outbound calls, the end of the
// connection) and receives inbound messages as (RequestID, method, params)
// on Server.handle and Server.handleNotification.
//
// The library is kept because it matches pending calls to responses and
// runs the read loop well; three of its habits need working around, and
// each workaround lives here:
//
//  1. jsonrpc2.ID holds a uint64 or a string, but ACP ids are any JSON
//     string, integer (negative, huge, any spelling) or null, and a reply
//     must echo the id byte for byte. An inbound request id is therefore
//     handed to the library as a string token, rawIDPrefix + the raw
//     JSON, and turned back into the raw bytes (RequestID) before our code
//     sees it (wireID). Ids of our own calls are the library's integers.
//  2. The library decodes a message into a map of raw values and copies
//     params more than once; a 4 MiB prompt would be copied and re-scanned
//     each time. Params are instead set aside in a table keyed by a small
//     integer that rides in the message's "meta" field (ignored by the
//     library and by ACP), and taken back, uncopied, when the request is
//     handled (takeParams).
//  3. The library encodes its own outbound calls with encoding/json (HTML
//     escaping, its own key order); WriteObject re-frames them in the
//     contract's key order without HTML escapes.
//
// Errors: a client's error response comes back as *ClientError, and a call
// on a closed connection as ErrConnClosed, never as library types.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// RequestID is an inbound request's id exactly as the client spelled it
// (raw JSON: a string, an integer or null).
type RequestID struct{ raw json.RawMessage }

// Raw returns the id's JSON, echoed as is in the response.
func (id RequestID) Raw() json.RawMessage {
	if id.raw == nil {
		return json.RawMessage("null")
	}
	return id.raw
}

// String is the id's JSON text (for logs).
func (id RequestID) String() string { return string(id.Raw()) }

// ErrConnClosed is returned by a call to the client once the connection is
// closed.
var ErrConnClosed = errors.New("acp: connection closed")

// ClientError is the client's error response to one of the agent's calls.
type ClientError struct {
	// Method is the method called.
	Method string
	// Err is the error object the client answered with.
	Err Error
}

func (e *ClientError) Error() string {
	return fmt.Sprintf("%s: the client answered with error %d: %s", e.Method, e.Err.Code, e.Err.Message)
}

// conn is the connection a Server speaks through: calls to the client and
// the connection's end. Inbound messages reach the inboundHandler it was
// opened with.
type conn interface {
	// Send writes an agent→client request before it returns and gives
	// back the wait for its result: a request whose place among the
	// frames matters, but whose answer need not hold up the sender.
	Send(ctx context.Context, method string, params json.RawMessage) (wait func(ctx context.Context, result any) error, err error)
	// Done is closed when the connection ends (the client's input ended).
	Done() <-chan struct{}
	// Close ends the connection.
	Close() error
}

// inboundHandler receives the client's messages, in arrival order, in the
// connection's read loop.
type inboundHandler interface {
	handle(ctx context.Context, id RequestID, method string, params json.RawMessage)
	handleNotification(ctx context.Context, method string, params json.RawMessage)
}

// openConn starts serving stream with jsonrpc2, handing requests to h.
func openConn(ctx context.Context, stream *LineStream, h inboundHandler, log zerolog.Logger) conn {
	ostream := newObjectStream(stream)
	handler := handlerFunc(func(ctx context.Context, req *jsonrpc2.Request) {
		params, ok := ostream.takeParams(req.Meta)
		if !ok {
			params = json.RawMessage("null")
			if req.Params != nil {
				params = *req.Params
			}
		}
		if req.Notif {
			h.handleNotification(ctx, req.Method, params)
			return
		}
		h.handle(ctx, RequestID{wireID(req.ID)}, req.Method, params)
	})
	return &rpcConn{c: jsonrpc2.NewConn(ctx, ostream, handler, jsonrpc2.SetLogger(zerologPrintf{log}))}
}

// handlerFunc is a jsonrpc2.Handler.
type handlerFunc func(ctx context.Context, req *jsonrpc2.Request)

func (f handlerFunc) Handle(ctx context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) {
	f(ctx, req)
}

// rpcConn is conn over a jsonrpc2.Conn.
type rpcConn struct{ c *jsonrpc2.Conn }

func (r *rpcConn) Send(ctx context.Context, method string, params json.RawMessage) (func(context.Context, any) error, error) {
	w, err := r.c.DispatchCall(ctx, method, params)
	if err != nil {
		return nil, callError(method, err)
	}
	return func(ctx context.Context, result any) error { return callError(method, w.Wait(ctx, result)) }, nil
}

// callError maps the library's errors to ours.
func callError(method string, err error) error {
	var je *jsonrpc2.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jsonrpc2.ErrClosed):
		return fmt.Errorf("%s: %w", method, ErrConnClosed)
	case errors.As(err, &je):
		ce := &ClientError{Method: method, Err: Error{Code: ErrorCode(je.Code), Message: je.Message}}
		if je.Data != nil {
			ce.Err.Data = *je.Data
		}
		return ce
	}
	return err
}

func (r *rpcConn) Done() <-chan struct{} { return r.c.DisconnectNotify() }

func (r *rpcConn) Close() error { return r.c.Close() }

// rawIDPrefix marks a jsonrpc2 string ID that carries the raw JSON of an
// inbound request id (workaround 1).
const rawIDPrefix = "\x00raw:"

// wireID returns the JSON to emit for a jsonrpc2 ID: the raw inbound id for
// tokens made by ReadObject, else the ID's own encoding.
func wireID(id jsonrpc2.ID) json.RawMessage {
	if id.IsString && strings.HasPrefix(id.Str, rawIDPrefix) {
		return json.RawMessage(id.Str[len(rawIDPrefix):])
	}
	b, _ := jsonx.Marshal(id)
	return b
}

// objectStream adapts a LineStream to jsonrpc2.ObjectStream.
type objectStream struct {
	ls *LineStream

	mu      sync.Mutex
	params  map[uint64]json.RawMessage // inbound params set aside (workaround 2)
	nextKey uint64
}

// newObjectStream adapts ls.
func newObjectStream(ls *LineStream) *objectStream {
	return &objectStream{ls: ls, params: map[uint64]json.RawMessage{}}
}

// ReadObject implements jsonrpc2.ObjectStream: the next well-formed
// message (the stream answers malformed input itself), rewritten for the
// library.
func (o *objectStream) ReadObject(v any) error {
	for {
		m, err := o.ls.readMessage()
		if err != nil {
			return err
		}
		b := m.response
		if b == nil {
			b = o.rewrite(m)
		}
		uerr := json.Unmarshal(b, v)
		if uerr == nil {
			return nil
		}
		// The library refused what the framing accepted (a response whose
		// id is not one of ours, say): answer it like any malformed line.
		id := m.id
		if id == nil {
			id = json.RawMessage("null")
		}
		o.ls.reject(b, id, invalidRequest(uerr.Error()))
	}
}

// rewrite encodes a request or notification for the library: the id as a
// raw-id token, params set aside under "meta".
func (o *objectStream) rewrite(m inbound) []byte {
	b := make([]byte, 0, 64+len(m.id)+len(m.method))
	b = append(b, `{"jsonrpc":"2.0"`...)
	if m.id != nil {
		b = append(b, `,"id":`...)
		b = jsonx.AppendString(b, rawIDPrefix+string(m.id))
	}
	b = append(b, `,"method":`...)
	b = jsonx.AppendString(b, m.method)
	if m.params != nil {
		o.mu.Lock()
		key := o.nextKey
		o.nextKey++
		o.params[key] = m.params // a span of the line: no copy
		o.mu.Unlock()
		b = append(b, `,"meta":`...)
		b = strconv.AppendUint(b, key, 10)
	}
	return append(b, '}')
}

// takeParams returns (and forgets) the params ReadObject set aside for a
// request; ok is false when the request carried none.
func (o *objectStream) takeParams(meta *json.RawMessage) (json.RawMessage, bool) {
	if meta == nil {
		return nil, false
	}
	key, err := strconv.ParseUint(string(*meta), 10, 64)
	if err != nil {
		return nil, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.params[key]
	delete(o.params, key)
	return p, ok
}

// WriteObject implements jsonrpc2.ObjectStream for the messages the library
// writes itself (our outbound calls): it re-frames them in contract key
// order without HTML escaping (workaround 3).
func (o *objectStream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var m struct {
		ID     *jsonrpc2.ID     `json:"id"`
		Method *string          `json:"method"`
		Params json.RawMessage  `json:"params"`
		Result json.RawMessage  `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, `{"jsonrpc":"2.0"`...)
	if m.ID != nil {
		out = append(out, `,"id":`...)
		out = append(out, wireID(*m.ID)...)
	}
	switch {
	case m.Method != nil:
		out = append(out, `,"method":`...)
		out = jsonx.AppendString(out, *m.Method)
		if m.Params != nil {
			out = append(out, `,"params":`...)
			out = append(out, jsonx.UnescapeHTML(m.Params)...)
		}
	case m.Error != nil:
		out = append(out, `,"error":`...)
		out = append(out, jsonx.UnescapeHTML(*m.Error)...)
	default:
		out = append(out, `,"result":`...)
		if m.Result == nil {
			out = append(out, "null"...)
		} else {
			out = append(out, jsonx.UnescapeHTML(m.Result)...)
		}
	}
	out = append(out, '}')
	return o.ls.WriteFrame(out)
}

// Close implements jsonrpc2.ObjectStream.
func (o *objectStream) Close() error { return o.ls.Close() }

// zerologPrintf adapts zerolog to the library's Logger.
type zerologPrintf struct{ l zerolog.Logger }

func (z zerologPrintf) Printf(format string, v ...any) { z.l.Debug().Msgf(format, v...) }
