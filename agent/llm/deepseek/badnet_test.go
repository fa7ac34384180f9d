package deepseek

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
)

// fakeClock is a Clock whose Sleep returns at once, advancing Now by the
// delay and recording it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// fullWindow is a Jitter that always picks the top of the window.
func fullWindow(limit time.Duration) time.Duration { return limit }

// SSE bodies of the bad-network scenarios.
const (
	sseReasoning = `data: {"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}` + "\n\n"
	sseText      = `data: {"choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":"stop"}]}` + "\n\n"
	sseDone      = "data: [DONE]\n\n"
	sseOK        = sseReasoning + sseText + sseDone
)

// okChunks is what sseOK translates to.
var okChunks = []string{
	`{"type":"block-start","index":0,"blockType":"reasoning"}`,
	`{"type":"reasoning-delta","index":0,"text":"think"}`,
	`{"type":"block-start","index":1,"blockType":"text"}`,
	`{"type":"text-delta","index":1,"text":"hello"}`,
	`{"type":"block-end","index":0,"block":{"type":"reasoning","text":"think"}}`,
	`{"type":"block-end","index":1,"block":{"type":"text","text":"hello"}}`,
	`{"type":"finish","reason":{"kind":"stop"}}`,
}

// answer is one scripted server behaviour.
type answer = http.HandlerFunc

func sse(body string) answer {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}
}

func status(code int, header ...string) answer {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"error":{"message":"scripted `+strconv.Itoa(code)+`"}}`)
	}
}

// neverAnswer sends nothing; it returns when the client goes away.
func neverAnswer(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// stallAfter writes body, flushes, then stalls until the client goes away.
func stallAfter(body string) answer {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// raw hijacks the connection, writes head+body verbatim and closes it;
// reset closes with a TCP RST instead of a FIN.
func raw(head, body string, reset bool) answer {
	return func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = buf.WriteString(head + body)
		_ = buf.Flush()
		if tc, ok := conn.(*net.TCPConn); ok && reset {
			_ = tc.SetLinger(0)
		}
		_ = conn.Close()
	}
}

// script serves answers in order, repeating the last; it counts requests.
type script struct {
	answers []answer
	n       atomic.Int32
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	i := int(s.n.Add(1)) - 1
	s.answers[min(i, len(s.answers)-1)](w, r)
}

// repeat returns n copies of a.
func repeat(n int, a answer) []answer {
	out := make([]answer, n)
	for i := range out {
		out[i] = a
	}
	return out
}

func TestBadNetwork(t *testing.T) {
	const preamble = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
	cases := []struct {
		name    string
		answers []answer
		cfg     Config // timeouts and retry knobs; the rest is filled in
		chunks  []string
		code    string // "" for success
		message string // the error's message, when set
		reqs    int
		sleeps  []time.Duration
		retries []string // Retry.Reason of each OnRetry
	}{
		{name: "stall before headers", answers: []answer{neverAnswer},
			cfg:  Config{HeaderTimeout: 50 * time.Millisecond, MaxRetries: 1},
			code: CodeTimeout, message: "the DeepSeek API sent no response within 50ms",
			reqs: 2, sleeps: []time.Duration{time.Second},
			retries: []string{"sent no response within 50ms"}},
		{name: "stall mid-stream", answers: []answer{stallAfter(sseReasoning)},
			cfg:    Config{IdleTimeout: 100 * time.Millisecond},
			chunks: okChunks[:2], code: CodeTimeout, message: "the DeepSeek API stream stalled: no data for 100ms",
			reqs: 1},
		{name: "stall before the first chunk", answers: []answer{stallAfter(": keep-alive\n\n"), sse(sseOK)},
			cfg:    Config{IdleTimeout: 100 * time.Millisecond},
			chunks: okChunks, reqs: 2, sleeps: []time.Duration{time.Second},
			retries: []string{"stream stalled (no data for 100ms)"}},
		{name: "429 with Retry-After then success",
			answers: []answer{status(429, "Retry-After", "1"), sse(sseOK)},
			chunks:  okChunks, reqs: 2, sleeps: []time.Duration{time.Second},
			retries: []string{"rate limited (HTTP 429)"}},
		{name: "Retry-After as an HTTP date",
			answers: []answer{status(503, "Retry-After", "Fri, 02 Jan 2026 03:04:12 GMT"), sse(sseOK)},
			chunks:  okChunks, reqs: 2, sleeps: []time.Duration{7 * time.Second},
			retries: []string{"server error (HTTP 503)"}},
		{name: "Retry-After capped", answers: []answer{status(429, "Retry-After", "3600"), sse(sseOK)},
			cfg:    Config{MaxRetryAfter: 20 * time.Second},
			chunks: okChunks, reqs: 2, sleeps: []time.Duration{20 * time.Second},
			retries: []string{"rate limited (HTTP 429)"}},
		{name: "500 three times then success", answers: append(repeat(3, status(500)), sse(sseOK)),
			chunks: okChunks, reqs: 4, sleeps: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
			retries: []string{"server error (HTTP 500)", "server error (HTTP 500)", "server error (HTTP 500)"}},
		{name: "502 504 529 then success", answers: []answer{status(502), status(504), status(529), sse(sseOK)},
			chunks: okChunks, reqs: 4, sleeps: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
			retries: []string{"server error (HTTP 502)", "server error (HTTP 504)", "overloaded (HTTP 529)"}},
		{name: "500 forever gives up after the retries", answers: []answer{status(500)},
			code: CodeServer, message: "scripted 500", reqs: 5,
			sleeps:  []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second},
			retries: repeatString(4, "server error (HTTP 500)")},
		{name: "500 forever gives up within the budget", answers: []answer{status(500, "Retry-After", "50")},
			code: CodeServer, message: "scripted 500", reqs: 3,
			sleeps:  []time.Duration{50 * time.Second, 50 * time.Second},
			retries: repeatString(2, "server error (HTTP 500)")},
		{name: "401 is not retried", answers: []answer{status(401)},
			code: CodeAuth, message: "scripted 401", reqs: 1},
		{name: "400 is not retried", answers: []answer{status(400)},
			code: CodeInvalidRequest, message: "scripted 400", reqs: 1},
		{name: "connection reset before the response", answers: []answer{raw("", "", true), sse(sseOK)},
			chunks: okChunks, reqs: 2, sleeps: []time.Duration{time.Second},
			retries: []string{"unreachable (connection reset by peer)"}},
		{name: "connection closed before the response", answers: []answer{raw("", "", false), sse(sseOK)},
			chunks: okChunks, reqs: 2, sleeps: []time.Duration{time.Second},
			retries: []string{"unreachable (the server closed the connection)"}},
		{name: "connection closed before the first chunk", answers: []answer{raw(preamble, ": hi\n\n", false), sse(sseOK)},
			chunks: okChunks, reqs: 2, sleeps: []time.Duration{time.Second},
			retries: []string{"stream ended before any data"}},
		{name: "connection reset mid-stream", answers: []answer{raw(preamble, sseReasoning, true)},
			chunks: okChunks[:2], code: CodeNetwork, message: "connection to the DeepSeek API lost: connection reset by peer",
			reqs: 1},
		{name: "truncated SSE", answers: []answer{raw(preamble, sseReasoning+`data: {"choices":[{"delta":{"content":"he`, false)},
			chunks: okChunks[:2], code: CodeStreamClosed, message: "SSE stream ended without [DONE]", reqs: 1},
		{name: "invalid tool-call JSON passes through", answers: []answer{sse(
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\": \"a"}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\", oops"}}]},"finish_reason":"tool_calls"}]}` + "\n\n" +
				sseDone)},
			chunks: []string{
				`{"type":"block-start","index":0,"blockType":"tool-call"}`,
				`{"type":"tool-call-delta","index":0,"id":"call_1","name":"read","argumentsDelta":"{\"path\": \"a"}`,
				`{"type":"tool-call-delta","index":0,"id":"call_1","name":"read","argumentsDelta":"\", oops"}`,
				`{"type":"block-end","index":0,"block":{"type":"tool-call","id":"call_1","name":"read","arguments":"{\"path\": \"a\", oops"}}`,
				`{"type":"finish","reason":{"kind":"tool-calls"}}`,
			}, reqs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := &script{answers: tc.answers}
			srv := httptest.NewServer(sc)
			t.Cleanup(srv.Close)
			clock := newFakeClock()
			var retries []Retry
			cfg := tc.cfg
			cfg.BaseURL, cfg.APIKey, cfg.Clock, cfg.Jitter = srv.URL, "sk-test", clock, fullWindow
			cfg.OnRetry = func(_ context.Context, r Retry) { retries = append(retries, r) }
			lines, err := collect(t, New(cfg).Stream(context.Background(), simpleRequest()))
			if tc.code == "" {
				require.NoError(t, err)
				require.Equal(t, tc.chunks, lines)
			} else {
				require.Error(t, err)
				require.Equal(t, len(tc.chunks)+1, len(lines), "%q", lines)
				if len(tc.chunks) > 0 {
					require.Equal(t, tc.chunks, lines[:len(lines)-1], "chunks delivered before the error")
				}
				le, ok := errors.AsType[*llm.Error](err)
				require.True(t, ok, "error %T %v", err, err)
				assert.Equal(t, tc.code, le.Code)
				assert.Equal(t, tc.message, le.Message)
				assert.NotEmpty(t, le.Hint)
				if tc.reqs > 1 {
					assert.Contains(t, le.Hint, "Gave up after "+strconv.Itoa(tc.reqs)+" attempts")
				}
			}
			assert.Equal(t, tc.reqs, int(sc.n.Load()), "requests the server saw")
			assert.Equal(t, tc.sleeps, clock.slept(), "backoff delays")
			var reasons []string
			for i, r := range retries {
				reasons = append(reasons, r.Reason)
				assert.Equal(t, i+2, r.Attempt)
				assert.Equal(t, tc.sleeps[i], r.Delay)
				assert.Equal(t, r.Code, llm.ErrorCode(r.Err))
			}
			assert.Equal(t, tc.retries, reasons, "OnRetry reasons")
		})
	}
}

func repeatString(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestRetryNotice(t *testing.T) {
	sc := &script{answers: []answer{status(429, "Retry-After", "4"), sse(sseOK)}}
	srv := httptest.NewServer(sc)
	defer srv.Close()
	var got []Retry
	p := New(Config{BaseURL: srv.URL, Clock: newFakeClock(),
		OnRetry: func(_ context.Context, r Retry) { got = append(got, r) }})
	_, err := collect(t, p.Stream(context.Background(), simpleRequest()))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, 429, got[0].Status)
	require.Equal(t, CodeRateLimit, got[0].Code)
	require.Equal(t, "DeepSeek API rate limited (HTTP 429), retrying in 4s (attempt 2 of 5)", got[0].String())
}

// TestCancelDuringBackoff cancels while the real clock waits out a
// Retry-After of a minute: the stream ends at once with the context's
// error, without another request.
func TestCancelDuringBackoff(t *testing.T) {
	sc := &script{answers: []answer{status(503, "Retry-After", "120")}}
	srv := httptest.NewServer(sc)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var delay time.Duration
	p := New(Config{BaseURL: srv.URL, OnRetry: func(_ context.Context, r Retry) {
		delay = r.Delay
		time.AfterFunc(20*time.Millisecond, cancel)
	}})
	start := time.Now()
	lines, err := collect(t, p.Stream(ctx, simpleRequest()))
	require.Less(t, time.Since(start), 10*time.Second, "returned long before the backoff ended")
	require.Len(t, lines, 1)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, DefaultMaxRetryAfter, delay, "Retry-After 120 is capped")
	require.Equal(t, int32(1), sc.n.Load())
}

// TestConnectTimeout points the provider at a TCP listener that accepts
// but never speaks TLS: the handshake is bounded by ConnectTimeout.
func TestConnectTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var accepted atomic.Int32
	var conns sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conns.Add(1)
			go func() {
				defer conns.Done()
				_, _ = io.Copy(io.Discard, bufio.NewReader(c)) // until the client hangs up
				_ = c.Close()
			}()
		}
	}()
	var reasons []string
	p := New(Config{BaseURL: "https://" + ln.Addr().String(), ConnectTimeout: 50 * time.Millisecond, MaxRetries: 1,
		Clock: newFakeClock(), OnRetry: func(_ context.Context, r Retry) { reasons = append(reasons, r.Reason) }})
	_, err = collect(t, p.Stream(context.Background(), simpleRequest()))
	want := "connecting to the DeepSeek API at " + ln.Addr().String() + " timed out after 50ms"
	require.Equal(t, CodeTimeout, llm.ErrorCode(err), "%v", err)
	require.Equal(t, want, err.Error())
	require.Equal(t, []string{"connection timed out after 50ms"}, reasons)
	require.Equal(t, int32(2), accepted.Load())
	_ = ln.Close()
	conns.Wait()
}

// TestIdleTimeoutCountsKeepAlives checks that SSE comments keep a slow
// stream alive: only silence trips the idle timeout.
func TestIdleTimeoutCountsKeepAlives(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		// 24 × 25 ms of keep-alives, past the 500 ms idle timeout; the wide
		// margin keeps a loaded machine's scheduling delays from looking
		// like silence.
		for range 24 {
			_, _ = io.WriteString(w, ": keep-alive\n\n")
			f.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(25 * time.Millisecond):
			}
		}
		_, _ = io.WriteString(w, sseOK)
	}))
	defer srv.Close()
	p := New(Config{BaseURL: srv.URL, IdleTimeout: 500 * time.Millisecond, MaxRetries: -1})
	lines, err := collect(t, p.Stream(context.Background(), simpleRequest()))
	require.NoError(t, err)
	require.Equal(t, okChunks, lines)
}

// TestIdleTimeoutIgnoresASlowConsumer checks that the idle timeout times
// the network, not the caller: a consumer that takes longer than it over
// one chunk still gets the rest of the stream.
func TestIdleTimeoutIgnoresASlowConsumer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseReasoning)
		w.(http.Flusher).Flush()
		time.Sleep(10 * time.Millisecond) // a separate read for the rest
		_, _ = io.WriteString(w, sseText+sseDone)
	}))
	defer srv.Close()
	p := New(Config{BaseURL: srv.URL, IdleTimeout: 50 * time.Millisecond, MaxRetries: -1})
	var lines []string
	for c, err := range p.Stream(context.Background(), simpleRequest()) {
		require.NoError(t, err)
		b, _ := c.MarshalJSON()
		lines = append(lines, string(b))
		if len(lines) == 2 {
			time.Sleep(200 * time.Millisecond) // four idle timeouts, busy
		}
	}
	require.Equal(t, okChunks, lines)
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{" 7 ", 7 * time.Second, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"Fri, 02 Jan 2026 03:05:05 GMT", time.Minute, true},
		{"Fri, 02 Jan 2026 03:00:00 GMT", 0, true},
		{"99999999999999", 24 * time.Hour, true},
	}
	for _, tc := range cases {
		got, ok := parseRetryAfter(tc.in, now)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestBackoffWindows(t *testing.T) {
	rp := retryPolicy{base: time.Second, max: 5 * time.Second, jitter: fullWindow}
	var got []time.Duration
	for n := 1; n <= 40; n++ {
		got = append(got, rp.backoff(n))
	}
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second}, got[:4])
	for _, d := range got[3:] {
		require.Equal(t, 5*time.Second, d, "capped, no overflow")
	}
	for range 1000 {
		d := uniformJitter(3 * time.Second)
		require.True(t, d >= 0 && d <= 3*time.Second, d)
	}
	require.Zero(t, uniformJitter(0))
}

// TestDrainedStreamReusesConnection checks that the per-attempt context
// and watchdog do not cost the connection reuse between steps.
func TestDrainedStreamReusesConnection(t *testing.T) {
	var conns, idle atomic.Int32
	srv := httptest.NewUnstartedServer(sse(sseOK + ": trailing\n\n"))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateIdle:
			idle.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	p := New(Config{BaseURL: srv.URL})
	req := &llm.Request{Config: llm.Config{Model: "m"},
		Messages: []llm.Message{{Role: "user", Content: []session.Block{session.TextBlock("x")}}}}
	for i := range 3 {
		lines, err := collect(t, p.Stream(context.Background(), req))
		require.NoError(t, err)
		require.Equal(t, okChunks, lines)
		// The server goes idle once the client drained the response.
		require.Eventually(t, func() bool { return idle.Load() > int32(i) }, 5*time.Second, time.Millisecond)
	}
	require.Equal(t, int32(1), conns.Load(), "all three calls rode one connection")
}
