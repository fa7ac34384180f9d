// Package deepseek is the live model provider: it streams DeepSeek chat
// completions and translates them into StreamChunks exactly as the replay
// contract (§ 8) and the session-log contract (§ 4, § 8) specify.
//
// Transport goes through github.com/sashabaranov/go-openai. The library
// cannot express the contract's request body (key order, `thinking`,
// `reasoning_content` echoes, `content: null`), its HTTP error mapping, or
// its SSE framing, so exactly one seam patches it: the per-call doer handed
// to go-openai as its HTTP client. It swaps in the body serialized here,
// sets the user-agent, maps non-2xx and bodiless responses to llm.Error,
// and keeps the response, whose body this package reads with its own SSE
// reader instead of go-openai's line reader.
package deepseek

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/dsh-acp/dsh-acp/agent/llm"
)

// DefaultBaseURL is the DeepSeek API root used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.deepseek.com"

// DefaultVersion is the version in the user-agent when Config.Version is
// empty.
const DefaultVersion = "dev"

// Error codes of HTTP failures (replay contract § 8); other non-2xx
// statuses use "HTTP_<status>".
const (
	CodeAuth           = "AUTH"
	CodeRateLimit      = "RATE_LIMIT"
	CodeInvalidRequest = "INVALID_REQUEST"
	CodeServer         = "SERVER"
	CodeEmptyResponse  = "EMPTY_RESPONSE"
)

// maxErrorBody bounds how much of an error response body is read.
const maxErrorBody = 1 << 20

// Thinking is DeepSeek's `thinking` request field.
type Thinking struct {
	// Type is "enabled" or "disabled".
	Type string `json:"type"`
}

// Thinking types.
const (
	ThinkingEnabled  = "enabled"
	ThinkingDisabled = "disabled"
)

// Config configures a Provider. The zero value talks to DefaultBaseURL
// without an API key.
type Config struct {
	// BaseURL is the API root; requests go to BaseURL + "/chat/completions".
	BaseURL string
	// APIKey is sent as `authorization: Bearer <APIKey>`.
	APIKey string
	// HTTPClient sends the requests; nil means a client of the default
	// transport whose dialing and TLS handshake ConnectTimeout bounds. Set
	// no overall Timeout on a custom client: streams are long, and
	// HeaderTimeout and IdleTimeout bound them anyway.
	HTTPClient *http.Client
	// Version is the agent version in the user-agent `dsh-acp/<Version>`.
	Version string
	// UserAgent, when non-empty, replaces the whole user-agent header.
	UserAgent string
	// Thinking, when non-nil, is sent as the `thinking` field.
	Thinking *Thinking
	// ReasoningEffort, when non-empty, is sent as `reasoning_effort`.
	ReasoningEffort string
	// APIKeyEnv names the variable the key comes from, for the hint of an
	// AUTH error; empty means DefaultAPIKeyEnv.
	APIKeyEnv string

	// ConnectTimeout bounds connecting (dial and TLS handshake) when
	// HTTPClient is nil. HeaderTimeout bounds the wait from sending a
	// request to its response headers; reasoning models can be slow to
	// start. IdleTimeout bounds the silence between reads of the response
	// body (keep-alive comments count as data). A stall ends the call with
	// a TIMEOUT llm.Error. Zero means DefaultConnectTimeout,
	// DefaultHeaderTimeout, DefaultIdleTimeout; negative means none.
	ConnectTimeout, HeaderTimeout, IdleTimeout time.Duration
	// DataIdleTimeout bounds, once the first data event of a response
	// arrived, the wait for the next one; keep-alive comments do not count
	// (before the first event they are a queued request's and only
	// IdleTimeout applies), nor does the time the caller spends on a chunk.
	// A stall after chunks reached the caller ends the call with a TIMEOUT
	// llm.Error (it cannot be retried without repeating them). Zero means
	// DefaultDataIdleTimeout, negative none.
	DataIdleTimeout time.Duration

	// MaxRetries is how many times a call is sent again after a rate
	// limit (429), a server error (500, 502, 503, 504, 529), a network
	// failure or a timeout, as long as no chunk has reached the caller;
	// zero means DefaultMaxRetries, negative none. RetryBudget bounds the
	// time from the first request to the start of the last retry; zero
	// means DefaultRetryBudget, negative unbounded.
	MaxRetries  int
	RetryBudget time.Duration
	// BackoffBase and BackoffMax shape the full-jitter backoff: retry n
	// waits a uniform pick in [0, min(BackoffMax, BackoffBase·2ⁿ⁻¹)],
	// unless the response had a Retry-After (seconds or an HTTP date),
	// which is honoured up to MaxRetryAfter. Zero means
	// DefaultBackoffBase, DefaultBackoffMax, DefaultMaxRetryAfter.
	BackoffBase, BackoffMax, MaxRetryAfter time.Duration
	// OnRetry, when non-nil, is called before each retry's wait, on the
	// goroutine iterating the stream (Retry.String is a notice for the
	// user).
	OnRetry func(ctx context.Context, r Retry)
	// Clock times backoff and the retry budget; nil means real time.
	Clock Clock
	// Jitter returns a duration in [0, limit] for the backoff; nil means
	// uniformly random.
	Jitter func(limit time.Duration) time.Duration
}

// Provider streams DeepSeek chat completions. It implements llm.Provider,
// holds no per-call state, and is safe for concurrent use.
type Provider struct {
	baseURL   string
	apiKey    string
	client    *http.Client
	ownClient bool // client is newClient's
	userAgent string
	keyEnv    string
	opts      requestOptions

	connectTimeout, headerTimeout, idleTimeout time.Duration // <= 0: none
	dataIdleTimeout                            time.Duration // <= 0: none
	retry                                      retryPolicy
	onRetry                                    func(context.Context, Retry)
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider for cfg, applying the defaults documented on
// Config.
func New(cfg Config) *Provider {
	p := &Provider{baseURL: cfg.BaseURL, apiKey: cfg.APIKey, client: cfg.HTTPClient, userAgent: cfg.UserAgent,
		keyEnv:          cmp.Or(cfg.APIKeyEnv, DefaultAPIKeyEnv),
		opts:            requestOptions{thinking: cfg.Thinking, reasoningEffort: cfg.ReasoningEffort},
		connectTimeout:  orDefault(cfg.ConnectTimeout, DefaultConnectTimeout),
		headerTimeout:   orDefault(cfg.HeaderTimeout, DefaultHeaderTimeout),
		idleTimeout:     orDefault(cfg.IdleTimeout, DefaultIdleTimeout),
		dataIdleTimeout: orDefault(cfg.DataIdleTimeout, DefaultDataIdleTimeout),
		retry: retryPolicy{
			maxRetries:    max(orDefault(cfg.MaxRetries, DefaultMaxRetries), 0),
			budget:        orDefault(cfg.RetryBudget, DefaultRetryBudget),
			base:          orDefault(cfg.BackoffBase, DefaultBackoffBase),
			max:           orDefault(cfg.BackoffMax, DefaultBackoffMax),
			maxRetryAfter: orDefault(cfg.MaxRetryAfter, DefaultMaxRetryAfter),
			clock:         cfg.Clock,
			jitter:        cfg.Jitter,
		},
		onRetry: cfg.OnRetry,
	}
	if p.retry.clock == nil {
		p.retry.clock = realClock{}
	}
	if p.retry.jitter == nil {
		p.retry.jitter = uniformJitter
	}
	if p.baseURL == "" {
		p.baseURL = DefaultBaseURL
	}
	if p.client == nil {
		p.client, p.ownClient = newClient(p.connectTimeout), true
	}
	if p.userAgent == "" {
		v := cfg.Version
		if v == "" {
			v = DefaultVersion
		}
		p.userAgent = "dsh-acp/" + v
	}
	return p
}

// Stream sends req and yields its chunks. The sequence ends after the
// finish chunk, or with one error: an *llm.Error (with a Hint) for HTTP
// failures, contract stream failures (STREAM_CLOSED, MALFORMED_RESPONSE),
// timeouts (TIMEOUT) and network failures (NETWORK), or an error
// satisfying errors.Is(err, ctx.Err()) once ctx is done. Failures before
// the first chunk are retried as Config describes; a failure after it
// ends the call. Stopping the iteration early closes the connection.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		body, err := buildBody(req, p.opts)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		rp := &p.retry
		start := rp.clock.Now()
		for n := 1; ; n++ {
			delivered, f := p.attempt(ctx, req.Config.Model, body, yield)
			if f == nil {
				return
			}
			if ctx.Err() != nil || delivered || f.reason == "" || n > rp.maxRetries {
				yield(llm.Chunk{}, p.explain(f.err, n, rp.clock.Now().Sub(start)))
				return
			}
			delay := rp.delay(n, f)
			if elapsed := rp.clock.Now().Sub(start); rp.budget > 0 && elapsed+delay > rp.budget {
				yield(llm.Chunk{}, p.explain(f.err, n, elapsed))
				return
			}
			if p.onRetry != nil {
				r := Retry{Attempt: n + 1, MaxAttempts: rp.maxRetries + 1, Delay: delay, Reason: f.reason,
					Code: llm.ErrorCode(f.err), Err: f.err}
				if le, ok := errors.AsType[*llm.Error](f.err); ok {
					r.Status = le.Status
				}
				p.onRetry(ctx, r)
			}
			if err := rp.clock.Sleep(ctx, delay); err != nil {
				yield(llm.Chunk{}, fmt.Errorf("deepseek: retry aborted: %w", err))
				return
			}
		}
	}
}

// attempt sends one request and streams its chunks to yield. It returns
// nil when the stream finished or the caller stopped, else the failure;
// delivered reports whether any chunk reached the caller.
func (p *Provider) attempt(ctx context.Context, model string, body []byte,
	yield func(llm.Chunk, error) bool) (delivered bool, f *failure) {
	actx, cancel := context.WithCancelCause(ctx)
	w := watch(cancel, p.headerTimeout, p.idleTimeout, p.dataIdleTimeout)
	rc, retryAfter, err := p.open(actx, model, body)
	if err != nil {
		w.stop()
		f = p.sendFailure(ctx, actx, err, retryAfter)
		cancel(nil)
		return false, f
	}
	w.body()
	finished := false
	err = translate(ctx, &watchedBody{rc, w}, func(c llm.Chunk) bool {
		delivered = true
		finished = finished || c.Type == llm.ChunkFinish
		w.consume(true)
		defer w.consume(false)
		return yield(c, nil)
	})
	if err != nil || !finished {
		w.stop()
		_ = rc.Close()
		if err != nil {
			f = readFailure(ctx, actx, err)
		}
		cancel(nil)
		return delivered, f
	}
	// The stream reached [DONE]: read what little remains in the
	// background so the connection goes back to the pool for the next
	// step (the idle timeout bounds the wait).
	go func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(&watchedBody{rc, w}, 64<<10))
		w.stop()
		_ = rc.Close()
		cancel(nil)
	}()
	return true, nil
}

// open sends the request through go-openai and returns the SSE body of a
// 2xx response, or the error and the response's Retry-After delay.
func (p *Provider) open(ctx context.Context, model string, body []byte) (io.ReadCloser, time.Duration, error) {
	d := &doer{client: p.client, body: body, userAgent: p.userAgent, now: p.retry.clock.Now}
	cfg := openai.DefaultConfig(p.apiKey)
	cfg.BaseURL = p.baseURL
	cfg.HTTPClient = d
	// go-openai marshals this request, but the doer replaces that body.
	stream, err := openai.NewClientWithConfig(cfg).CreateChatCompletionStream(ctx,
		openai.ChatCompletionRequest{Model: model})
	if err != nil {
		return nil, d.retryAfter, err
	}
	if d.resp == nil { // go-openai succeeded without calling the doer
		_ = stream.Close()
		return nil, 0, errors.New("deepseek: go-openai returned a stream without a response")
	}
	// stream.Close closes the same body; go-openai's reader is never used.
	return struct {
		io.Reader
		io.Closer
	}{d.resp.Body, stream}, 0, nil
}

// doer is the single seam between go-openai and the wire, one per call.
// go-openai builds the request (URL, authorization, content-type, accept,
// context); the doer replaces its body with the contract serialization,
// sets the user-agent, turns non-2xx and bodiless responses into
// llm.Error, and keeps the successful response for the SSE reader.
type doer struct {
	client     *http.Client
	body       []byte
	userAgent  string
	now        func() time.Time
	resp       *http.Response
	retryAfter time.Duration // of a failed response
}

// Do implements openai.HTTPDoer.
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	req.Body = io.NopCloser(bytes.NewReader(d.body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(d.body)), nil }
	req.ContentLength = int64(len(d.body))
	req.Header.Set("User-Agent", d.userAgent)
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	if err := checkResponse(resp); err != nil {
		d.retryAfter, _ = parseRetryAfter(resp.Header.Get("Retry-After"), d.now())
		_ = resp.Body.Close()
		return nil, err
	}
	d.resp = resp
	return resp, nil
}

// checkResponse maps a response the stream cannot be read from to an
// llm.Error: non-2xx statuses, and 204/205 (a fetch response without body).
func checkResponse(resp *http.Response) error {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return httpError(resp.StatusCode, raw)
	}
	if resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusResetContent {
		return &llm.Error{Message: "DeepSeek API returned no response body", Code: CodeEmptyResponse,
			Status: resp.StatusCode}
	}
	return nil
}

// orDefault returns v, or def when v is zero.
func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
