package deepseek

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retry defaults; see Config.
const (
	DefaultMaxRetries    = 4
	DefaultRetryBudget   = 2 * time.Minute
	DefaultBackoffBase   = time.Second
	DefaultBackoffMax    = 30 * time.Second
	DefaultMaxRetryAfter = 60 * time.Second
)

// Retry describes a retry about to happen, as handed to Config.OnRetry
// before the provider waits Delay and sends the request again.
type Retry struct {
	// Attempt is the number of the request about to be sent: 2 for the
	// first retry.
	Attempt int
	// MaxAttempts is the most requests the call will send.
	MaxAttempts int
	// Delay is how long the provider waits before sending it.
	Delay time.Duration
	// Reason says what failed, worded to follow "DeepSeek API": "rate
	// limited (HTTP 429)", "server error (HTTP 503)", "unreachable
	// (connection refused)", "sent no response within 60s", ...
	Reason string
	// Status is the HTTP status of the failure, 0 for a network failure
	// or a timeout.
	Status int
	// Code is the llm.Error code of the failure (RATE_LIMIT, SERVER,
	// NETWORK, TIMEOUT, STREAM_CLOSED).
	Code string
	// Err is the failure.
	Err error
}

// String is a one-line notice for the user, e.g. "DeepSeek API rate
// limited (HTTP 429), retrying in 4s (attempt 2 of 5)".
func (r Retry) String() string {
	return "DeepSeek API " + r.Reason + ", retrying in " + formatDuration(r.Delay) +
		" (attempt " + strconv.Itoa(r.Attempt) + " of " + strconv.Itoa(r.MaxAttempts) + ")"
}

// Clock is the time source of retries: Now measures the retry budget and
// Sleep waits out a backoff. Timeouts always use real time.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or returns ctx's error as soon as ctx is done.
	Sleep(ctx context.Context, d time.Duration) error
}

// realClock is the Clock of a zero Config.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// uniformJitter returns a uniformly random duration in [0, limit].
func uniformJitter(limit time.Duration) time.Duration {
	if limit <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(limit) + 1))
}

// retryPolicy is the resolved retry configuration of a Provider.
type retryPolicy struct {
	maxRetries    int
	budget        time.Duration // <= 0: unbounded
	base, max     time.Duration
	maxRetryAfter time.Duration
	clock         Clock
	jitter        func(time.Duration) time.Duration
}

// backoff returns the full-jitter delay before retry n (1-based): a
// uniform pick in [0, min(max, base·2ⁿ⁻¹)].
func (rp *retryPolicy) backoff(n int) time.Duration {
	limit := rp.max
	if shift := n - 1; shift < 32 {
		if w := rp.base << shift; w > 0 && w < limit {
			limit = w
		}
	}
	return rp.jitter(limit)
}

// delay returns the wait before retry n of f: the server's Retry-After
// when it sent a positive one (capped), else the jittered backoff.
func (rp *retryPolicy) delay(n int, f *failure) time.Duration {
	if f.retryAfter > 0 {
		return min(f.retryAfter, rp.maxRetryAfter)
	}
	return rp.backoff(n)
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date (relative to now). It reports false when the header is absent or
// unreadable; a date in the past is a zero delay.
func parseRetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(24*time.Hour/time.Second) {
			secs = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(h)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// retryableStatus reports whether an HTTP status is worth retrying, and
// the reason a retry notice gives ("" when it is not).
func retryableStatus(status int) (string, bool) {
	s := "(HTTP " + strconv.Itoa(status) + ")"
	switch status {
	case http.StatusTooManyRequests:
		return "rate limited " + s, true
	case 529:
		return "overloaded " + s, true
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout:
		return "server error " + s, true
	}
	return "", false
}

// formatDuration renders whole seconds as "90s" and anything finer as
// time.Duration does ("150ms", "1.5s").
func formatDuration(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	if d >= time.Second {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.String()
}
