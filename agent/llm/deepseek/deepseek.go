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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"

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
	// HTTPClient sends the requests; nil means a client without timeout
	// (streams are long; cancel through the context instead).
	HTTPClient *http.Client
	// Version is the agent version in the user-agent `dsh-acp/<Version>`.
	Version string
	// UserAgent, when non-empty, replaces the whole user-agent header.
	UserAgent string
	// Thinking, when non-nil, is sent as the `thinking` field.
	Thinking *Thinking
	// ReasoningEffort, when non-empty, is sent as `reasoning_effort`.
	ReasoningEffort string
}

// Provider streams DeepSeek chat completions. It implements llm.Provider,
// holds no per-call state, and is safe for concurrent use.
type Provider struct {
	baseURL   string
	apiKey    string
	client    *http.Client
	userAgent string
	opts      requestOptions
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider for cfg, applying the defaults documented on
// Config.
func New(cfg Config) *Provider {
	p := &Provider{baseURL: cfg.BaseURL, apiKey: cfg.APIKey, client: cfg.HTTPClient, userAgent: cfg.UserAgent,
		opts: requestOptions{thinking: cfg.Thinking, reasoningEffort: cfg.ReasoningEffort}}
	if p.baseURL == "" {
		p.baseURL = DefaultBaseURL
	}
	if p.client == nil {
		p.client = &http.Client{}
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
// finish chunk, or with one error: an *llm.Error for HTTP failures and
// contract stream failures (STREAM_CLOSED, MALFORMED_RESPONSE), an error
// satisfying errors.Is(err, ctx.Err()) once ctx is done, or a wrapped
// transport error. Stopping the iteration early closes the connection.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		body, err := p.open(ctx, req)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		finished := false
		err = translate(ctx, body, func(c llm.Chunk) bool {
			finished = finished || c.Type == llm.ChunkFinish
			return yield(c, nil)
		})
		if err != nil || !finished {
			_ = body.Close()
			if err != nil {
				yield(llm.Chunk{}, err)
			}
			return
		}
		// The stream reached [DONE]: read what little remains in the
		// background so the connection goes back to the pool for the next
		// step (the request's context bounds the wait).
		go func() {
			_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
			_ = body.Close()
		}()
	}
}

// open sends the request through go-openai and returns the SSE body of a
// 2xx response.
func (p *Provider) open(ctx context.Context, req *llm.Request) (io.ReadCloser, error) {
	body, err := buildBody(req, p.opts)
	if err != nil {
		return nil, err
	}
	d := &doer{client: p.client, body: body, userAgent: p.userAgent}
	cfg := openai.DefaultConfig(p.apiKey)
	cfg.BaseURL = p.baseURL
	cfg.HTTPClient = d
	// go-openai marshals this request, but the doer replaces that body.
	stream, err := openai.NewClientWithConfig(cfg).CreateChatCompletionStream(ctx,
		openai.ChatCompletionRequest{Model: req.Config.Model})
	if err != nil {
		if le, ok := errors.AsType[*llm.Error](err); ok {
			return nil, le
		}
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			return nil, fmt.Errorf("deepseek: request aborted: %w (%w)", ctxErr, err)
		}
		return nil, fmt.Errorf("deepseek: sending request: %w", err)
	}
	if d.resp == nil { // go-openai succeeded without calling the doer
		_ = stream.Close()
		return nil, errors.New("deepseek: go-openai returned a stream without a response")
	}
	// stream.Close closes the same body; go-openai's reader is never used.
	return struct {
		io.Reader
		io.Closer
	}{d.resp.Body, stream}, nil
}

// doer is the single seam between go-openai and the wire, one per call.
// go-openai builds the request (URL, authorization, content-type, accept,
// context); the doer replaces its body with the contract serialization,
// sets the user-agent, turns non-2xx and bodiless responses into
// llm.Error, and keeps the successful response for the SSE reader.
type doer struct {
	client    *http.Client
	body      []byte
	userAgent string
	resp      *http.Response
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

// httpError builds the error of a non-2xx response: the body's
// error.message when it is JSON and has one, else a generic message.
func httpError(status int, body []byte) *llm.Error {
	e := &llm.Error{Message: "DeepSeek API error (HTTP " + strconv.Itoa(status) + ")", Status: status}
	var j struct {
		Error *struct {
			Message *string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &j) == nil && j.Error != nil && j.Error.Message != nil && *j.Error.Message != "" {
		e.Message = *j.Error.Message
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Code = CodeAuth
	case status == http.StatusTooManyRequests:
		e.Code = CodeRateLimit
	case status == http.StatusBadRequest:
		e.Code = CodeInvalidRequest
	case status >= 500:
		e.Code = CodeServer
	default:
		e.Code = "HTTP_" + strconv.Itoa(status)
	}
	return e
}
