// Package mockllm is a scripted, deterministic LLM server for benchmarks.
// It speaks four streaming dialects on loopback only, so that dsh-acp and
// other ACP agents can be driven by the same replies without a network:
//
//   - OpenAI Chat Completions: POST …/chat/completions (SSE `data:` chunks,
//     reasoning_content, content, tool_calls, usage, [DONE])
//   - OpenAI Responses: POST …/responses (typed `event:` frames)
//   - Anthropic Messages: POST …/messages (message_start … message_stop)
//   - Gemini: POST …/models/MODEL:streamGenerateContent?alt=sse (and
//     :generateContent, :countTokens)
//
// Any path prefix is accepted (/v1, /v1beta, none). A leading
// /agent/LABEL segment names the client: its requests are recorded under
// LABEL and its tool-call script can be configured per label.
//
// What is answered depends on the last message of the request:
//
//   - a tool result (role "tool", function_call_output, tool_result,
//     functionResponse): a short closing text;
//   - a JSON-mode request (Gemini responseMimeType application/json): a
//     small JSON object with the fields Gemini CLI's side queries read;
//   - in a streaming request, user text containing MOCK:SLOW: a slow text
//     stream (one chunk every Options.SlowInterval, bounded by
//     Options.SlowMax), for cancel tests;
//   - in a streaming request, MOCK:CHUNKS=N: N text chunks as fast as
//     possible (stress);
//   - MOCK:TOOL (only when the request declares tools): one tool call from
//     the dialect's ToolCall script; MOCK:PATH=P sets its {{path}};
//   - anything else: a short reasoning and text reply.
//
// Output is deterministic: ids count requests from 1, timestamps are fixed,
// and usage is derived from the request size and the reply.
package mockllm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Dialects the server speaks; they key Options.Tools.
const (
	DialectOpenAI    = "openai"
	DialectResponses = "responses"
	DialectAnthropic = "anthropic"
	DialectGemini    = "gemini"
)

// Reply kinds, as recorded in Record.Kind.
const (
	KindText     = "text"
	KindTool     = "tool"
	KindFollowUp = "followup"
	KindSlow     = "slow"
	KindChunks   = "chunks"
	KindOther    = "other" // models, token counts, non-LLM endpoints
)

// Created is the fixed creation timestamp of every reply.
const Created = 1700000000

// Bounds of the server; Options may lower or raise them.
const (
	DefaultMaxBodyBytes  = 32 << 20
	DefaultMaxChunks     = 2_000_000
	DefaultMaxConcurrent = 32
	DefaultSlowInterval  = 10 * time.Millisecond
	DefaultSlowMax       = 30 * time.Second
	maxRecords           = 4096
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// Addr is the listen address; it must be a loopback IP. Default
	// "127.0.0.1:0".
	Addr string
	// Tools maps "DIALECT" or "LABEL/DIALECT" to the tool call MOCK:TOOL
	// answers with; missing keys use DefaultTools.
	Tools map[string]ToolCall
	// ChunkDelay is slept between the chunks of ordinary replies.
	ChunkDelay time.Duration
	// SlowInterval is the delay between MOCK:SLOW chunks (default 10 ms).
	SlowInterval time.Duration
	// SlowMax bounds a MOCK:SLOW stream's duration (default 30 s).
	SlowMax time.Duration
	// MaxChunks bounds MOCK:CHUNKS=N (default 2,000,000).
	MaxChunks int
	// MaxBodyBytes bounds a request body (default 32 MiB).
	MaxBodyBytes int64
	// MaxConcurrent bounds the requests served at once (default 32);
	// more are answered 503.
	MaxConcurrent int
	// DumpDir, when set, receives every request body as
	// SEQ-LABEL-DIALECT.json, to see what an agent sends (its tool names,
	// for the Tools scripts).
	DumpDir string
}

// Record describes one served request.
type Record struct {
	// Seq numbers requests from 1.
	Seq uint64 `json:"seq"`
	// Label is the /agent/LABEL prefix, "" without one.
	Label string `json:"label,omitempty"`
	// Dialect is one of the Dialect constants, "" for other endpoints.
	Dialect string `json:"dialect,omitempty"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Start is when the handler was entered, End when it returned.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// FirstByte is when the first chunk was flushed (zero if none).
	FirstByte time.Time `json:"firstByte"`
	// LastFlush is when the stream's last flush began (zero if none): the
	// client cannot have had the reply's last byte before it, whereas it
	// may have acted on it before End, which is taken after.
	LastFlush time.Time `json:"lastFlush"`
	// Chunks is the number of content chunks (reasoning, text, tool
	// arguments) written; Bytes the response bytes.
	Chunks int   `json:"chunks"`
	Bytes  int64 `json:"bytes"`
	// Aborted is true when the client went away before the reply ended.
	Aborted bool `json:"aborted,omitempty"`
}

// Duration is End - Start.
func (r Record) Duration() time.Duration { return r.End.Sub(r.Start) }

// LastByte is the latest time the client can have had the reply's last
// byte from: LastFlush for a stream, End otherwise.
func (r Record) LastByte() time.Time {
	if r.LastFlush.IsZero() {
		return r.End
	}
	return r.LastFlush
}

// Server is a running mock. Close stops it.
type Server struct {
	opts Options
	ln   net.Listener
	srv  *http.Server
	sem  chan struct{}
	seq  atomic.Uint64

	mu      sync.Mutex
	records []Record
	first   map[uint64]time.Time // first-byte times of requests in flight
}

// New starts a server on a loopback address.
func New(opts Options) (*Server, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if err := checkLoopback(opts.Addr); err != nil {
		return nil, err
	}
	if opts.SlowInterval <= 0 {
		opts.SlowInterval = DefaultSlowInterval
	}
	if opts.SlowMax <= 0 {
		opts.SlowMax = DefaultSlowMax
	}
	if opts.MaxChunks <= 0 {
		opts.MaxChunks = DefaultMaxChunks
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("mockllm: %w", err)
	}
	s := &Server{opts: opts, ln: ln, sem: make(chan struct{}, opts.MaxConcurrent), first: map[uint64]time.Time{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 1 << 20}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// checkLoopback refuses listen addresses that are not loopback IPs.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("mockllm: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("mockllm: address %q is not a loopback IP", addr)
	}
	return nil
}

// URL is the server root, e.g. "http://127.0.0.1:40123".
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server and aborts open streams.
func (s *Server) Close() error { return s.srv.Close() }

// Shutdown stops accepting requests and waits for open ones until ctx is
// done.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// LastSeq is the Seq of the latest request started (0 before any).
func (s *Server) LastSeq() uint64 { return s.seq.Load() }

// Records returns the finished requests with Seq > after, in Seq order.
// Only the latest 4096 are kept.
func (s *Server) Records(after uint64) []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Record
	for _, r := range s.records {
		if r.Seq > after {
			out = append(out, r)
		}
	}
	return out
}

// FirstByteSince is the earliest time a request with Seq > after, finished
// or still in flight, sent its first bytes; false if none has yet.
func (s *Server) FirstByteSince(after uint64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	for seq, t := range s.first {
		if seq > after {
			consider(t)
		}
	}
	for _, r := range s.records {
		if r.Seq > after {
			consider(r.FirstByte)
		}
	}
	return first, !first.IsZero()
}

func (s *Server) noteFirstByte(seq uint64, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.first[seq] = t
}

func (s *Server) record(r Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.first, r.Seq)
	i := len(s.records)
	for i > 0 && s.records[i-1].Seq > r.Seq {
		i--
	}
	s.records = append(s.records, Record{})
	copy(s.records[i+1:], s.records[i:])
	s.records[i] = r
	if len(s.records) > maxRecords {
		s.records = s.records[len(s.records)-maxRecords:]
	}
}

// ServeHTTP routes a request by the end of its path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	default:
		http.Error(w, `{"error":{"message":"mockllm: too many concurrent requests"}}`, http.StatusServiceUnavailable)
		return
	}
	rec := Record{Seq: s.seq.Add(1), Start: time.Now(), Kind: KindOther}
	path := r.URL.Path
	if rest, ok := strings.CutPrefix(path, "/agent/"); ok {
		label, tail, _ := strings.Cut(rest, "/")
		rec.Label, path = label, "/"+tail
	}
	defer func() {
		rec.End = time.Now()
		s.record(rec)
	}()
	if r.Method == http.MethodGet && strings.HasSuffix(path, "/models") {
		writeJSON(w, &rec, modelList())
		return
	}
	if r.Method != http.MethodPost {
		jsonError(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		jsonError(w, http.StatusRequestEntityTooLarge, "reading body: "+err.Error())
		return
	}
	if s.opts.DumpDir != "" {
		name := fmt.Sprintf("%04d-%s-%s.json", rec.Seq, rec.Label, strings.Trim(strings.ReplaceAll(path, "/", "_"), "_"))
		_ = os.WriteFile(filepath.Join(s.opts.DumpDir, name), body, 0o600)
	}
	h := &handler{s: s, w: w, r: r, rec: &rec, body: body}
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		h.dialect(DialectOpenAI, parseOpenAI, writeOpenAI)
	case strings.HasSuffix(path, "/responses"):
		h.dialect(DialectResponses, parseResponses, writeResponses)
	case strings.HasSuffix(path, "/messages/count_tokens"):
		writeJSON(w, &rec, map[string]int{"input_tokens": promptTokens(body)})
	case strings.HasSuffix(path, "/messages"):
		h.dialect(DialectAnthropic, parseAnthropic, writeAnthropic)
	case strings.Contains(path, "/models/") && strings.HasSuffix(path, ":countTokens"):
		writeJSON(w, &rec, map[string]int{"totalTokens": promptTokens(body)})
	case strings.Contains(path, "/models/") && (strings.HasSuffix(path, ":streamGenerateContent") ||
		strings.HasSuffix(path, ":generateContent")):
		h.dialect(DialectGemini, parseGemini, writeGemini)
	default:
		jsonError(w, http.StatusNotFound, "no route for POST "+r.URL.Path)
	}
}

// handler serves one LLM request.
type handler struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	rec  *Record
	body []byte
}

// parsed is what the script needs to know about a request.
type parsed struct {
	Model        string
	Stream       bool
	HasTools     bool
	IncludeUsage bool // OpenAI stream_options.include_usage
	Thinking     bool // Anthropic thinking / Gemini includeThoughts requested
	JSONMode     bool // Gemini responseMimeType application/json
	ToolResult   bool // the last message is a tool result
	UserText     string
}

// dialect parses the body, picks the reply and writes it.
func (h *handler) dialect(name string, parse func([]byte, *http.Request) (*parsed, error),
	write func(*stream, *parsed, *Reply)) {
	h.rec.Dialect = name
	p, err := parse(h.body, h.r)
	if err != nil {
		jsonError(h.w, http.StatusBadRequest, name+" request: "+err.Error())
		return
	}
	reply := h.s.script(name, h.rec.Label, p)
	reply.ID = h.rec.Seq
	reply.PromptTokens = promptTokens(h.body)
	h.rec.Kind = reply.Kind
	st := newStream(h.s, h.r.Context(), h.w, h.rec, reply)
	if p.Stream {
		h.w.Header().Set("Content-Type", "text/event-stream")
		h.w.Header().Set("Cache-Control", "no-cache")
	} else {
		h.w.Header().Set("Content-Type", "application/json")
	}
	h.w.WriteHeader(http.StatusOK)
	write(st, p, reply)
	st.close()
}

// promptTokens is the deterministic prompt size estimate: body bytes / 4.
func promptTokens(body []byte) int { return len(body)/4 + 1 }

func modelList() map[string]any {
	m := map[string]any{"id": "mock", "object": "model", "created": Created, "owned_by": "mockllm",
		"type": "model", "display_name": "Mock", "name": "models/mock"}
	return map[string]any{"object": "list", "data": []any{m}, "models": []any{m}}
}

func writeJSON(w http.ResponseWriter, rec *Record, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	n, _ := w.Write(b)
	rec.Bytes += int64(n)
}

func jsonError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "mockllm: " + msg, "type": "invalid_request_error"}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// errNotObject is returned for bodies that are not a JSON object.
var errNotObject = errors.New("body is not a JSON object")
