package deepseek

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/dsh-acp/dsh-acp/agent/llm"
)

// Error codes of failures the contract does not name: a stalled or slow
// connection, and a network failure (refused, reset, unresolvable host).
const (
	CodeTimeout = "TIMEOUT"
	CodeNetwork = "NETWORK"
)

// DefaultAPIKeyEnv is the variable an AUTH hint names when
// Config.APIKeyEnv is empty.
const DefaultAPIKeyEnv = "DEEPSEEK_API_KEY"

// failure is a failed attempt: the error to report and, when the attempt
// is worth repeating, why.
type failure struct {
	err        error
	reason     string        // non-empty: retryable; the Retry.Reason, after "DeepSeek API "
	retryAfter time.Duration // the server's Retry-After, 0 when absent
}

// httpError builds the error of a non-2xx response: the body's
// error.message when it is JSON and has one, else a generic message
// (replay contract § 8).
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

// sendFailure classifies the failure of sending a request (no response,
// or a non-2xx one). ctx is the call's context, actx the attempt's.
func (p *Provider) sendFailure(ctx, actx context.Context, err error, retryAfter time.Duration) *failure {
	if le, ok := errors.AsType[*llm.Error](err); ok {
		reason, _ := retryableStatus(le.Status)
		return &failure{err: le, reason: reason, retryAfter: retryAfter}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if !errors.Is(err, ctxErr) {
			err = fmt.Errorf("deepseek: request aborted: %w (%w)", ctxErr, err)
		}
		return &failure{err: err}
	}
	if te, ok := context.Cause(actx).(*timeoutError); ok {
		return &failure{err: &llm.Error{Message: te.Error(), Code: CodeTimeout, Err: te}, reason: te.reason()}
	}
	host := requestHost(err)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// With the provider's own client only connecting has a transport
		// timeout; a custom client's could be anything.
		msg := "the request to the DeepSeek API at " + host + " timed out (" + describe(err) + ")"
		reason := "timed out (" + describe(err) + ")"
		if p.ownClient && p.connectTimeout > 0 {
			te := &timeoutError{what: stallConnect, after: p.connectTimeout, host: host}
			msg, reason = te.Error(), te.reason()
		}
		return &failure{err: &llm.Error{Message: msg, Code: CodeTimeout, Err: err}, reason: reason}
	}
	cause := describe(err)
	le := &llm.Error{Message: "cannot reach the DeepSeek API at " + host + ": " + cause, Code: CodeNetwork, Err: err}
	if !retryableNetwork(err) {
		return &failure{err: le}
	}
	return &failure{err: le, reason: "unreachable (" + cause + ")"}
}

// readFailure classifies the failure of reading a 2xx response's stream.
// Its reason says why a retry would be worth it; the caller retries only
// when no chunk reached the stream's consumer.
func readFailure(ctx, actx context.Context, err error) *failure {
	f := &failure{err: err}
	switch le, ok := errors.AsType[*llm.Error](err); {
	case ok:
		if le.Code == CodeStreamClosed {
			f.reason = "stream ended before any data"
		}
	case ctx.Err() != nil:
		return f // translate reports the abort
	default:
		if te, ok := context.Cause(actx).(*timeoutError); ok {
			f.err = &llm.Error{Message: te.Error(), Code: CodeTimeout, Err: te}
			f.reason = te.reason()
			break
		}
		cause := describe(err)
		f.err = &llm.Error{Message: "connection to the DeepSeek API lost: " + cause, Code: CodeNetwork, Err: err}
		f.reason = "connection lost (" + cause + ")"
	}
	return f
}

// retryableNetwork reports whether a transport failure may pass: any but
// an unknown host, a certificate or TLS protocol problem, or a request URL
// no transport can send (a bad scheme, no host).
func retryableNetwork(err error) bool {
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		return !de.IsNotFound
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return false
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return false
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return false
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return false
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return false // not a TLS server
	}
	if errors.Is(err, http.ErrSchemeMismatch) {
		return false // https to a plain HTTP server
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		u, perr := url.Parse(ue.URL)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return false
		}
	}
	return true
}

// describe is the short human cause of a transport error: the system
// error ("connection refused") when there is one, else the innermost
// message.
func describe(err error) string {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		return errno.Error()
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection"
	}
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		if de.IsNotFound {
			return "no such host"
		}
		return de.Error()
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

// requestHost is the host of the URL a transport error names, or "the
// configured base URL".
func requestHost(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			return u.Host
		}
	}
	return "the configured base URL"
}

// explain sets the Hint of the *llm.Error a call ends with, saying what
// to do and, after retries, how many attempts were made.
func (p *Provider) explain(err error, attempts int, elapsed time.Duration) error {
	le, ok := errors.AsType[*llm.Error](err)
	if !ok {
		return err
	}
	again := "send the prompt again"
	var hint string
	switch le.Code {
	case CodeAuth:
		hint = "DeepSeek refused the API key: check " + p.keyEnv +
			" (for Zed: the \"env\" of the agent_servers entry)."
	case CodeRateLimit:
		hint = "DeepSeek is rate limiting this key: wait a minute, then " + again + "."
	case CodeServer:
		hint = "DeepSeek's servers are failing: try again in a few minutes."
	case CodeInvalidRequest:
		hint = "DeepSeek refused the request: check the model name and the model settings in the dsh-acp config."
	case "HTTP_402":
		hint = "Check the balance of the DeepSeek account."
	case "HTTP_404":
		hint = "Check the base URL (" + p.baseURL + ") and the model name."
	case CodeEmptyResponse, CodeMalformedResponse:
		hint = "Check that the base URL (" + p.baseURL + ") points at a DeepSeek-compatible API."
	case CodeStreamClosed:
		hint = "The answer was cut off: " + again + "."
	case CodeTimeout, CodeNetwork:
		hint = "Check the network connection and the base URL (" + p.baseURL + "), then " + again + "."
	default:
		if le.Status >= 400 && le.Status < 500 {
			hint = "Check the model name and the model settings in the dsh-acp config."
		}
	}
	if attempts > 1 {
		hint = "Gave up after " + strconv.Itoa(attempts) + " attempts in " + formatDuration(elapsed.Round(time.Second)) +
			". " + hint
	}
	le.Hint = hint
	return le
}
