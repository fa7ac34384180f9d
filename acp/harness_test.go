package acp

// This file holds the wire harness and the in-memory fake agent every test
// of the package uses (exported so the external acp_test package can use
// them too: composition imports acp, so the tests that drive a composed
// runtime live there), and the framing tests (acp-bridge § 1).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/acpschema"
)

// WaitFor bounds every wait of the harness.
const WaitFor = 5 * time.Second

// KnownBug skips a test that demonstrates a reported bug unless ACP_BUGS is
// set (ACP_BUGS=1 go test -race ./acp/ shows the failures).
func KnownBug(tb testing.TB, what string) {
	tb.Helper()
	if os.Getenv("ACP_BUGS") == "" {
		tb.Skip("BUG: " + what + " (set ACP_BUGS=1 to run)")
	}
}

// RaceEnabled reports whether the test binary runs under the race detector.
func RaceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// Harness

// Harness runs Server.Serve over io.Pipes through an acpclient.Conn: tests
// write raw lines and read raw output lines, every wait bounded. The agent's
// requests stay unanswered unless the options host them. At cleanup it ends
// the input (EOF), waits for Serve to return and validates every line the
// server wrote (acpclient.Conn.Check: envelope key order, no HTML escapes,
// ACP schema).
type Harness struct {
	tb  testing.TB
	Srv *Server
	// Conn is the client connection (its transcript, updates, the fs and
	// terminals it hosts).
	Conn *acpclient.Conn

	mu     sync.Mutex
	pos    int // the next output line Next returns
	eofAt  int // Conn.Len() when input ended (-1: not yet)
	nextID int

	// NoValidate skips frame validation at cleanup (benchmarks only).
	NoValidate bool
}

// StartHarness serves srv over pipes until the test ends.
func StartHarness(tb testing.TB, srv *Server) *Harness {
	tb.Helper()
	return StartHarnessWith(tb, srv, acpclient.Options{})
}

// StartHarnessWith is StartHarness with client options (handlers, FS,
// Terminals); requests no option handles stay unanswered, and frames are
// validated against the stable schema unless opts name one.
func StartHarnessWith(tb testing.TB, srv *Server, opts acpclient.Options) *Harness {
	tb.Helper()
	if opts.Fallback == nil {
		opts.Fallback = func(context.Context, acpclient.Request) (any, error) { return acpclient.NoReply, nil }
	}
	if opts.Schema == nil {
		opts.Schema = loadACPSchema(tb)
	}
	h := &Harness{tb: tb, Srv: srv, Conn: acpclient.Serve(srv.Serve, opts), eofAt: -1, nextID: 100}
	tb.Cleanup(h.finish)
	return h
}

// finish ends the input, waits for Serve and validates every emitted line.
func (h *Harness) finish() {
	h.EOF()
	select {
	case <-h.Conn.Done():
	case <-time.After(WaitFor):
		h.tb.Errorf("harness: output reader did not finish within %v", WaitFor)
	}
	if !h.NoValidate {
		h.Conn.Report(h.tb)
		return
	}
	for _, l := range h.Conn.Transcript() {
		if l.NoEOL {
			h.tb.Errorf("frame not terminated by \\n: %s", acpschema.ClipLine(l.Data))
		}
	}
}

// frameID returns the raw id of an emitted frame (nil if none; "null" for
// a null id).
func frameID(line []byte) json.RawMessage {
	var p map[string]json.RawMessage
	_ = json.Unmarshal(line, &p)
	id, ok := p["id"]
	if ok && id == nil {
		return json.RawMessage("null")
	}
	return id
}

// EOF closes the client's side of the input and waits (bounded) for Serve
// to return. It reports whether Serve returned.
func (h *Harness) EOF() bool {
	h.mu.Lock()
	if h.eofAt < 0 {
		h.eofAt = h.Conn.Len()
	}
	h.mu.Unlock()
	_ = h.Conn.CloseWrite()
	select {
	case <-h.Conn.Stopped():
		return true
	case <-time.After(WaitFor):
		h.tb.Errorf("Serve did not return within %v of EOF", WaitFor)
		return false
	}
}

// LinesAfterEOF returns the lines read after EOF was sent.
func (h *Harness) LinesAfterEOF() [][]byte {
	h.mu.Lock()
	at := h.eofAt
	h.mu.Unlock()
	if at < 0 {
		return nil
	}
	return h.Conn.Since(at)
}

// Expect records that the request id (raw JSON) calls method, for
// validating its response (Send does this itself for small lines).
func (h *Harness) Expect(id, method string) { h.Conn.Expect(id, method) }

// Send writes the lines, each followed by "\n", in ONE write.
func (h *Harness) Send(lines ...string) {
	h.tb.Helper()
	bs := make([][]byte, len(lines))
	n := 0
	for i, l := range lines {
		bs[i] = []byte(l)
		n += len(l) + 1
	}
	h.write(func() error { return h.Conn.SendLines(bs...) }, n, WaitFor)
}

// SendRaw writes b as is; the server must consume it within timeout.
func (h *Harness) SendRaw(b []byte, timeout time.Duration) {
	h.tb.Helper()
	h.write(func() error { _, err := h.Conn.Write(b); return err }, len(b), timeout)
}

func (h *Harness) write(w func() error, n int, timeout time.Duration) {
	h.tb.Helper()
	done := make(chan error, 1)
	go func() { done <- w() }()
	select {
	case err := <-done:
		require.NoError(h.tb, err, "write to server")
	case <-time.After(timeout):
		h.tb.Fatalf("server did not consume %d input bytes within %v (read loop blocked?)", n, timeout)
	}
}

// Next returns the next output line, failing after WaitFor.
func (h *Harness) Next() []byte {
	h.tb.Helper()
	return h.NextWithin(WaitFor)
}

// NextWithin returns the next output line, failing after d.
func (h *Harness) NextWithin(d time.Duration) []byte {
	h.tb.Helper()
	line, ok := h.TryNext(d)
	if !ok {
		h.tb.Fatalf("no output line within %v", d)
	}
	return line
}

// TryNext returns the next output line, or false after d.
func (h *Harness) TryNext(d time.Duration) ([]byte, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	h.mu.Lock()
	pos := h.pos
	h.mu.Unlock()
	line, err := h.Conn.NextLine(ctx, pos)
	if err != nil {
		return nil, false
	}
	h.mu.Lock()
	h.pos = pos + 1
	h.mu.Unlock()
	return line, true
}

// Await reads until the response to the request with raw id and returns
// it with the lines that came before it.
func (h *Harness) Await(id string) (resp []byte, before [][]byte) {
	h.tb.Helper()
	return h.AwaitWithin(id, WaitFor)
}

// AwaitWithin is Await with a custom bound.
func (h *Harness) AwaitWithin(id string, d time.Duration) (resp []byte, before [][]byte) {
	h.tb.Helper()
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		line, ok := h.TryNext(max(left, 0))
		if !ok {
			h.tb.Fatalf("no response to id %s within %v (lines before: %d)", id, d, len(before))
		}
		f := ParseWireFrame(h.tb, line)
		if f.Method == "" && string(f.ID) == id {
			return line, before
		}
		before = append(before, line)
	}
}

// Roundtrip sends a request and returns its response and the lines
// that arrived before it.
func (h *Harness) Roundtrip(id, method, params string) (resp []byte, before [][]byte) {
	h.tb.Helper()
	h.Send(RequestLine(id, method, params))
	return h.Await(id)
}

// Call sends a request with a fresh integer id and returns the response
// frame; other lines that arrive first are returned too.
func (h *Harness) Call(method, params string) (WireFrame, [][]byte) {
	h.tb.Helper()
	h.mu.Lock()
	h.nextID++
	id := fmt.Sprint(h.nextID)
	h.mu.Unlock()
	resp, before := h.Roundtrip(id, method, params)
	return ParseWireFrame(h.tb, resp), before
}

// NewSession opens a session at cwd and returns its id.
func (h *Harness) NewSession(cwd string) string {
	h.tb.Helper()
	f, _ := h.Call("session/new", `{"cwd":`+JSONQuote(cwd)+`,"mcpServers":[]}`)
	require.Nil(h.tb, f.Error, "session/new")
	var r struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(h.tb, json.Unmarshal(f.Result, &r))
	require.NotEmpty(h.tb, r.SessionID)
	return r.SessionID
}

// RequestLine builds a request line; params "" omits params.
func RequestLine(id, method, params string) string {
	s := `{"jsonrpc":"2.0","id":` + id + `,"method":` + JSONQuote(method)
	if params != "" {
		s += `,"params":` + params
	}
	return s + "}"
}

// NotificationLine builds a notification line.
func NotificationLine(method, params string) string {
	return `{"jsonrpc":"2.0","method":` + JSONQuote(method) + `,"params":` + params + `}`
}

// PromptParams builds session/prompt params with one text block.
func PromptParams(sid, text string) string {
	return `{"sessionId":` + JSONQuote(sid) + `,"prompt":[{"type":"text","text":` + JSONQuote(text) + `}]}`
}

// JSONQuote JSON-encodes s without HTML escaping.
func JSONQuote(s string) string { return string(mustJSON(s)) }

func mustJSON(v any) []byte {
	b, err := marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// WireFrame is a parsed output line.
type WireFrame struct {
	Raw    []byte
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// ParseWireFrame parses one output line.
func ParseWireFrame(tb testing.TB, line []byte) WireFrame {
	tb.Helper()
	var f WireFrame
	require.NoError(tb, json.Unmarshal(line, &f), "output line is not JSON: %s", acpschema.ClipLine(line))
	f.Raw = line
	return f
}

// UpdateKinds returns the sessionUpdate of each session/update line.
func UpdateKinds(tb testing.TB, lines [][]byte) []string {
	tb.Helper()
	var out []string
	for _, l := range lines {
		f := ParseWireFrame(tb, l)
		if f.Method != "session/update" {
			continue
		}
		var p struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
			} `json:"update"`
		}
		require.NoError(tb, json.Unmarshal(f.Params, &p))
		out = append(out, p.Update.SessionUpdate)
	}
	return out
}
