package deepseek

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/fixtures"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// fixture reads one of the shared recorded-style responses of package
// fixtures (SSE streams and error bodies).
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := fs.ReadFile(fixtures.DeepSeek(), name)
	require.NoError(t, err)
	return b
}

// received is what the test server saw of one request.
type received struct {
	method, path string
	header       http.Header
	body         []byte
}

// recorder captures requests; safe for the server goroutines.
type recorder struct {
	mu   sync.Mutex
	reqs []received
}

func (r *recorder) add(req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, received{req.Method, req.URL.Path, req.Header.Clone(), b})
}

func (r *recorder) only(t *testing.T) received {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.reqs, 1)
	return r.reqs[0]
}

// serveBody answers every request with status, content type and body,
// writing the body in small flushed pieces so SSE events straddle reads.
func serveBody(t *testing.T, status int, contentType string, body []byte) (*httptest.Server, *recorder) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		f, _ := w.(http.Flusher)
		for len(body) > 0 {
			n := min(97, len(body))
			if _, err := w.Write(body[:n]); err != nil {
				return
			}
			body = body[n:]
			if f != nil {
				f.Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

// errorLine is how a golden file records the error ending a stream.
type errorLine struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
	Status  int    `json:"status,omitempty"`
}

// collect drains a stream: each chunk as a JSON line, then the error as a
// final {"error":{...}} line.
func collect(t *testing.T, seq func(func(llm.Chunk, error) bool)) ([]string, error) {
	t.Helper()
	var lines []string
	var last error
	for c, err := range seq {
		if err != nil {
			last = err
			var le *llm.Error
			if errors.As(err, &le) {
				lines = append(lines, string(jsonx.MustMarshal(errorLine{errorJSON{le.Message, le.Code, le.Status}})))
			} else {
				lines = append(lines, string(jsonx.MustMarshal(errorLine{errorJSON{Message: err.Error()}})))
			}
			continue
		}
		require.Nil(t, last, "chunk after error")
		b, merr := c.MarshalJSON()
		require.NoError(t, merr)
		lines = append(lines, string(b))
	}
	return lines, last
}

// checkGolden compares lines with testdata/<name>.golden.jsonl; `go test
// -update` rewrites it.
func checkGolden(t *testing.T, name string, lines []string) {
	t.Helper()
	golden.Assert(t, strings.Join(lines, "\n")+"\n", name+".golden.jsonl")
}

// simpleRequest is a one-message request.
func simpleRequest() *llm.Request {
	return &llm.Request{Config: llm.Config{Model: "deepseek-v4-flash"},
		Messages: []llm.Message{{Role: "user", Content: []session.Block{session.TextBlock("hi")}}}}
}

func TestFixtures(t *testing.T) {
	cases := []struct {
		name, file  string
		status      int
		contentType string
		code        string // expected llm.Error code, "" for success
	}{
		{"reasoning-text", "reasoning-text.sse", 200, "text/event-stream", ""},
		{"reasoning-tool-calls", "reasoning-tool-calls.sse", 200, "text/event-stream", ""},
		{"keepalive-crlf", "keepalive-crlf.sse", 200, "text/event-stream; charset=utf-8", ""},
		{"no-done", "no-done.sse", 200, "text/event-stream", CodeStreamClosed},
		{"malformed", "malformed.sse", 200, "text/event-stream", CodeMalformedResponse},
		{"finish-length", "finish-length.sse", 200, "text/event-stream", ""},
		{"finish-content-filter", "finish-content-filter.sse", 200, "text/event-stream", ""},
		{"http-401", "http-401.json", 401, "application/json", CodeAuth},
		{"http-402", "http-402.json", 402, "application/json", "HTTP_402"},
		{"http-500", "http-500.html", 500, "text/html", CodeServer},
	}
	// Default retries, without waiting: a 500 is sent 1 + DefaultMaxRetries
	// times, the rest once.
	requests := map[string]int{"http-500": 1 + DefaultMaxRetries}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := fixture(t, tc.file)
			srv, rec := serveBody(t, tc.status, tc.contentType, body)
			p := New(Config{BaseURL: srv.URL, APIKey: "sk-test", Version: "1.2.3", Clock: newFakeClock()})
			lines, err := collect(t, p.Stream(context.Background(), simpleRequest()))
			if tc.code == "" {
				require.NoError(t, err)
				var last llm.Chunk
				require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
				require.Equal(t, llm.ChunkFinish, last.Type)
			} else {
				require.Equal(t, tc.code, llm.ErrorCode(err), "error: %v", err)
			}
			checkGolden(t, tc.name, lines)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			require.Len(t, rec.reqs, cmp.Or(requests[tc.name], 1))
			for _, got := range rec.reqs {
				require.Equal(t, http.MethodPost, got.method)
				require.Equal(t, "/chat/completions", got.path)
				require.Equal(t, rec.reqs[0].body, got.body, "a retry sends the same body")
			}
		})
	}
}

// TestFixturesAssemble checks that the chunks of a fixture assemble into
// the blocks the block-ends carry.
func TestFixturesAssemble(t *testing.T) {
	body := fixture(t, "reasoning-tool-calls.sse")
	srv, _ := serveBody(t, 200, "text/event-stream", body)
	var a llm.Assembler
	for c, err := range New(Config{BaseURL: srv.URL}).Stream(context.Background(), simpleRequest()) {
		require.NoError(t, err)
		a.Add(c)
	}
	require.Equal(t, []session.Block{
		{Type: session.BlockReasoning, Text: "I'll read both files first."},
		{Type: session.BlockToolCall, ID: "call_00_zv6gJBK64n6qd5FWnj4E3831", Name: "read",
			Arguments: `{"file_path": "notes.txt"}`},
		{Type: session.BlockToolCall, ID: "call_01_Qm3xT9pLr2Vw8Kd5Ys7Hn1Bf", Name: "grep",
			Arguments: `{"pattern":"TODO\\b","path":"src/<lib>&"}`},
	}, a.Content())
	require.Equal(t, llm.FinishReason{Kind: llm.FinishToolCalls}, a.Finish())
	cached, reasoning := 3200, 7
	require.Equal(t, &llm.Usage{InputTokens: 45, OutputTokens: 93, CacheReadTokens: &cached,
		ReasoningTokens: &reasoning}, a.Usage())
}

func TestRequestHeaders(t *testing.T) {
	body := fixture(t, "finish-length.sse")
	srv, rec := serveBody(t, 200, "text/event-stream", body)
	p := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "sk-abc123", Version: "0.4.2"})
	_, err := collect(t, p.Stream(context.Background(), simpleRequest()))
	require.NoError(t, err)
	got := rec.only(t)
	require.Equal(t, http.MethodPost, got.method)
	require.Equal(t, "/v1/chat/completions", got.path)
	require.Equal(t, "Bearer sk-abc123", got.header.Get("Authorization"))
	require.Equal(t, "application/json", got.header.Get("Content-Type"))
	require.Equal(t, "text/event-stream", got.header.Get("Accept"))
	require.Equal(t, "dsh-acp/0.4.2", got.header.Get("User-Agent"))
	require.Equal(t, []string{"Bearer sk-abc123"}, got.header.Values("Authorization"))
	require.Equal(t, `{"model":"deepseek-v4-flash","messages":[{"role":"user","content":"hi"}],`+
		`"stream":true,"stream_options":{"include_usage":true}}`, string(got.body))
	require.Equal(t, int64(len(got.body)), mustAtoi(t, got.header.Get("Content-Length")))
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}

func TestRequestBodyHistory(t *testing.T) {
	body := fixture(t, "reasoning-text.sse")
	srv, rec := serveBody(t, 200, "text/event-stream", body)
	p := New(Config{BaseURL: srv.URL, APIKey: "k", Thinking: &Thinking{Type: ThinkingEnabled},
		ReasoningEffort: "high"})
	_, err := collect(t, p.Stream(context.Background(), historyRequest()))
	require.NoError(t, err)
	var got bytes.Buffer
	require.NoError(t, json.Indent(&got, rec.only(t).body, "", "  "))
	got.WriteByte('\n')
	golden.Assert(t, got.String(), "request-history.json")
}

func TestHTTPErrors(t *testing.T) {
	cases := []struct {
		status      int
		body        string
		message     string
		code        string
		contentType string
	}{
		{401, `{"error":{"message":"bad key"}}`, "bad key", CodeAuth, "application/json"},
		{403, `{"error":{"message":"forbidden region"}}`, "forbidden region", CodeAuth, "application/json"},
		{429, `{"error":{"message":"Rate limit reached"}}`, "Rate limit reached", CodeRateLimit, "application/json"},
		{400, `{"error":{"message":"Invalid tool schema","type":"invalid_request_error"}}`, "Invalid tool schema",
			CodeInvalidRequest, "application/json"},
		{400, `{"error":{"type":"invalid_request_error"}}`, "DeepSeek API error (HTTP 400)", CodeInvalidRequest,
			"application/json"},
		{422, `{"error":"unprocessable"}`, "DeepSeek API error (HTTP 422)", "HTTP_422", "application/json"},
		{503, ``, "DeepSeek API error (HTTP 503)", CodeServer, "text/plain"},
		{502, `{"error":{"message":123}}`, "DeepSeek API error (HTTP 502)", CodeServer, "application/json"},
		{404, `Not Found`, "DeepSeek API error (HTTP 404)", "HTTP_404", "text/plain"},
		{304, ``, "DeepSeek API error (HTTP 304)", "HTTP_304", "text/plain"},
		{204, ``, "DeepSeek API returned no response body", CodeEmptyResponse, "text/plain"},
	}
	for _, tc := range cases {
		t.Run(tc.message, func(t *testing.T) {
			srv, _ := serveBody(t, tc.status, tc.contentType, []byte(tc.body))
			// One request: the retries are TestBadNetwork's.
			lines, err := collect(t, New(Config{BaseURL: srv.URL, MaxRetries: -1}).Stream(context.Background(), simpleRequest()))
			require.Len(t, lines, 1)
			le, ok := errors.AsType[*llm.Error](err)
			require.True(t, ok, "error %T %v", err, err)
			require.Equal(t, tc.message, le.Message)
			require.Equal(t, tc.code, le.Code)
			require.Equal(t, tc.status, le.Status)
			if tc.status != 304 {
				require.NotEmpty(t, le.Hint, "every failure says what to do")
			}
		})
	}
}

func TestTransportError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	clock := newFakeClock()
	var retries []Retry
	lines, err := collect(t, New(Config{BaseURL: url, Clock: clock,
		OnRetry: func(_ context.Context, r Retry) { retries = append(retries, r) }}).Stream(context.Background(), simpleRequest()))
	require.Len(t, lines, 1)
	le, ok := errors.AsType[*llm.Error](err)
	require.True(t, ok, "error %T %v", err, err)
	require.Equal(t, CodeNetwork, le.Code)
	require.Equal(t, "cannot reach the DeepSeek API at "+strings.TrimPrefix(url, "http://")+": connection refused", le.Message)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	require.Len(t, retries, DefaultMaxRetries, "a refused connection is retried")
	require.Equal(t, "unreachable (connection refused)", retries[0].Reason)
	require.Equal(t, "DeepSeek API unreachable (connection refused), retrying in 1s (attempt 2 of 5)",
		Retry{Attempt: 2, MaxAttempts: 5, Delay: time.Second, Reason: retries[0].Reason}.String())
	require.Contains(t, le.Hint, "Gave up after 5 attempts")
	require.Contains(t, le.Hint, "Check the network connection and the base URL ("+url+")")
}

// TestPermanentTransportErrors checks that failures no retry can mend
// fail at once.
func TestPermanentTransportErrors(t *testing.T) {
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	host := strings.TrimPrefix(plain.URL, "http://")
	cases := map[string]string{
		"http://no-such-host.invalid": "cannot reach the DeepSeek API at no-such-host.invalid: no such host",
		"ftp://" + host:               "cannot reach the DeepSeek API at " + host + `: unsupported protocol scheme "ftp"`,
		"https://" + host:             "cannot reach the DeepSeek API at " + host + ": " + http.ErrSchemeMismatch.Error(),
	}
	// Names resolve through a local DNS server that knows none.
	dialer := &net.Dialer{Resolver: &net.Resolver{PreferGo: true, Dial: nxdomainServer(t)}}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	for base, want := range cases {
		var retries int
		p := New(Config{BaseURL: base, HTTPClient: client, Clock: newFakeClock(),
			OnRetry: func(context.Context, Retry) { retries++ }})
		_, err := collect(t, p.Stream(context.Background(), simpleRequest()))
		require.Equal(t, CodeNetwork, llm.ErrorCode(err), "%v", err)
		require.Equal(t, want, err.Error())
		require.Zero(t, retries, base)
	}
}

// slowServer streams one reasoning delta, then one every interval until
// the client goes away, which it reports on closed.
func slowServer(t *testing.T, interval time.Duration) (*httptest.Server, <-chan struct{}) {
	t.Helper()
	closed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(closed)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for {
			_, err := io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"reasoning_content":"tick"}}]}`+"\n\n")
			if err != nil {
				return
			}
			f.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(interval):
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, closed
}

func TestCancelAbortsStream(t *testing.T) {
	srv, closed := slowServer(t, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var chunks []llm.Chunk
	var streamErr error
	start := time.Now()
	for c, err := range New(Config{BaseURL: srv.URL}).Stream(ctx, simpleRequest()) {
		if err != nil {
			streamErr = err
			break
		}
		chunks = append(chunks, c)
		if len(chunks) == 2 { // block-start + first delta: the server now sleeps
			cancel()
		}
	}
	require.Less(t, time.Since(start), 3*time.Second)
	require.Len(t, chunks, 2)
	require.ErrorIs(t, streamErr, context.Canceled)
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("server did not see the connection close")
	}
}

func TestCancelBeforeRequest(t *testing.T) {
	srv, _ := slowServer(t, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lines, err := collect(t, New(Config{BaseURL: srv.URL}).Stream(ctx, simpleRequest()))
	require.Len(t, lines, 1)
	require.ErrorIs(t, err, context.Canceled)
}

func TestBreakClosesConnection(t *testing.T) {
	srv, closed := slowServer(t, 20*time.Millisecond)
	n := 0
	for _, err := range New(Config{BaseURL: srv.URL}).Stream(context.Background(), simpleRequest()) {
		require.NoError(t, err)
		if n++; n == 3 {
			break
		}
	}
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("server did not see the connection close")
	}
}

// countingTransport counts the round trips of a custom client.
type countingTransport struct {
	mu sync.Mutex
	n  int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func TestConfigClientAndUserAgent(t *testing.T) {
	body := fixture(t, "finish-length.sse")
	srv, rec := serveBody(t, 200, "text/event-stream", body)
	tr := &countingTransport{}
	p := New(Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: tr}, UserAgent: "custom/9"})
	_, err := collect(t, p.Stream(context.Background(), simpleRequest()))
	require.NoError(t, err)
	tr.mu.Lock()
	require.Equal(t, 1, tr.n)
	tr.mu.Unlock()
	got := rec.only(t)
	require.Equal(t, "custom/9", got.header.Get("User-Agent"))
	require.Empty(t, got.header.Values("Authorization"))

	srv2, rec2 := serveBody(t, 200, "text/event-stream", body)
	_, err = collect(t, New(Config{BaseURL: srv2.URL}).Stream(context.Background(), simpleRequest()))
	require.NoError(t, err)
	require.Equal(t, "dsh-acp/"+DefaultVersion, rec2.only(t).header.Get("User-Agent"))
}

// nxdomainServer starts a UDP DNS server answering every query with
// NXDOMAIN and returns a resolver Dial func that reaches it.
func nxdomainServer(t *testing.T) func(ctx context.Context, _, _ string) (net.Conn, error) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n < 12 {
				continue
			}
			resp := append([]byte(nil), buf[:n]...)
			resp[2], resp[3] = 0x81, 0x83 // response, recursion desired+available, NXDOMAIN
			copy(resp[6:12], []byte{0, 0, 0, 0, 0, 0})
			_, _ = pc.WriteTo(resp, addr)
		}
	}()
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}
}
