package deepseek

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Timeout defaults; see Config.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultHeaderTimeout  = 60 * time.Second
	DefaultIdleTimeout    = 90 * time.Second
	// DefaultDataIdleTimeout bounds the wait for the next data event once
	// the answer has begun: DeepSeek streams tokens without pauses that
	// long, so a stream that goes on sending only keep-alive comments is
	// stuck, not thinking.
	DefaultDataIdleTimeout = 2 * time.Minute
)

// stall names what a timeout waited for.
type stall int

const (
	stallConnect stall = iota // dialing and the TLS handshake
	stallHeaders              // the response headers
	stallIdle                 // the next bytes of the response body
	stallData                 // the next data event, once one arrived (comments do not count)
)

// timeoutError is the cause a watchdog cancels an attempt with, and the
// Err of the TIMEOUT llm.Error it becomes.
type timeoutError struct {
	what  stall
	after time.Duration
	host  string // stallConnect only
}

func (e *timeoutError) Error() string {
	switch e.what {
	case stallConnect:
		return "connecting to the DeepSeek API at " + e.host + " timed out after " + formatDuration(e.after)
	case stallHeaders:
		return "the DeepSeek API sent no response within " + formatDuration(e.after)
	case stallData:
		return "the DeepSeek API stream stalled after the answer began: nothing but keep-alive comments for " + formatDuration(e.after)
	}
	return "the DeepSeek API stream stalled: no data for " + formatDuration(e.after)
}

// reason is the timeout as a retry notice words it, after "DeepSeek API ".
func (e *timeoutError) reason() string {
	switch e.what {
	case stallConnect:
		return "connection timed out after " + formatDuration(e.after)
	case stallHeaders:
		return "sent no response within " + formatDuration(e.after)
	case stallData:
		return "stream stalled (only keep-alive comments for " + formatDuration(e.after) + ")"
	}
	return "stream stalled (no data for " + formatDuration(e.after) + ")"
}

// Timeout reports true, as net.Error timeouts do.
func (e *timeoutError) Timeout() bool { return true }

// Watchdog phases.
const (
	phaseHeaders int32 = iota
	phaseBody
)

// watchdog enforces one attempt's header, idle and data-idle timeouts with
// a single timer that cancels the attempt's context. The idle timeout
// bounds how long one read of the body waits for bytes, so a consumer slow
// to ask for more never trips it. The data-idle timeout bounds, once the
// first data event arrived, the wait for the next one: keep-alive comments
// reset the idle timeout but not this one (before the first event they are
// legitimate, a queued request), and the time the consumer spends on a
// chunk does not count. Reads only store timestamps and flags; the timer
// re-arms itself lazily when it fires early, so the streaming hot path
// never touches the timer.
type watchdog struct {
	cancel    context.CancelCauseFunc
	header    time.Duration // <= 0: none
	idle      time.Duration // <= 0: none
	data      time.Duration // <= 0: none
	start     time.Time     // monotonic base of since and lastData
	since     atomic.Int64  // nanoseconds from start to the start of the body read in progress
	reading   atomic.Bool   // a body read is in progress
	lastData  atomic.Int64  // nanoseconds from start to the end of the last data event's handling
	started   atomic.Bool   // a data event arrived
	consuming atomic.Bool   // the consumer holds a chunk
	phase     atomic.Int32
	done      atomic.Bool
	timer     *time.Timer // nil when no timeout is set
}

// watch starts the header phase of an attempt whose context cancel
// cancels.
func watch(cancel context.CancelCauseFunc, header, idle, data time.Duration) *watchdog {
	w := &watchdog{cancel: cancel, header: header, idle: idle, data: data, start: time.Now()}
	switch {
	case header > 0:
		w.timer = time.AfterFunc(header, w.fire)
	case idle > 0 || data > 0:
		// Armed when the body phase begins.
		w.timer = time.AfterFunc(time.Hour, w.fire)
		w.timer.Stop()
	}
	return w
}

// period is the body phase's re-arm interval: the shorter timeout.
func (w *watchdog) period() time.Duration {
	switch {
	case w.idle > 0 && w.data > 0:
		return min(w.idle, w.data)
	case w.idle > 0:
		return w.idle
	}
	return w.data
}

// body switches to the body phase: from now on the attempt fails after
// idle without a read that returns data.
func (w *watchdog) body() {
	if w.timer == nil {
		return
	}
	w.phase.Store(phaseBody)
	if w.idle <= 0 && w.data <= 0 {
		w.timer.Stop()
		return
	}
	w.timer.Reset(w.period())
}

// event notes that a data event was handled: from now on, and until the
// next one, the data-idle timeout runs.
func (w *watchdog) event() {
	w.lastData.Store(int64(time.Since(w.start)))
	w.started.Store(true)
}

// consume brackets the consumer's handling of a chunk (held true).
func (w *watchdog) consume(held bool) {
	if !held {
		w.lastData.Store(int64(time.Since(w.start)))
	}
	w.consuming.Store(held)
}

// stop ends the watch; a timer firing late does nothing.
func (w *watchdog) stop() {
	w.done.Store(true)
	if w.timer != nil {
		w.timer.Stop()
	}
}

// fire runs on the timer's goroutine.
func (w *watchdog) fire() {
	if w.done.Load() {
		return
	}
	if w.phase.Load() == phaseHeaders {
		w.cancel(&timeoutError{what: stallHeaders, after: w.header})
		return
	}
	if w.idle <= 0 && w.data <= 0 {
		return
	}
	now := time.Since(w.start)
	next := w.period()
	if w.data > 0 && w.started.Load() && !w.consuming.Load() {
		waited := now - time.Duration(w.lastData.Load())
		if waited >= w.data {
			w.cancel(&timeoutError{what: stallData, after: w.data})
			return
		}
		next = min(next, w.data-waited)
	}
	if w.idle > 0 && w.reading.Load() { // not reading: the consumer is busy, not the network
		waited := now - time.Duration(w.since.Load())
		if waited >= w.idle {
			w.cancel(&timeoutError{what: stallIdle, after: w.idle})
			return
		}
		next = min(next, w.idle-waited)
	}
	w.timer.Reset(next)
}

// watchedBody is a response body whose reads the watchdog times.
type watchedBody struct {
	io.ReadCloser
	w *watchdog
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.w.since.Store(int64(time.Since(b.w.start)))
	b.w.reading.Store(true)
	n, err := b.ReadCloser.Read(p)
	b.w.reading.Store(false)
	return n, err
}

// event implements eventNoter.
func (b *watchedBody) event() { b.w.event() }

// newClient returns the HTTP client of a Config without one: the default
// transport with connect bounding the dial and the TLS handshake.
func newClient(connect time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: max(connect, 0), KeepAlive: 30 * time.Second}
	tr.DialContext = d.DialContext
	tr.TLSHandshakeTimeout = max(connect, 0)
	return &http.Client{Transport: tr}
}
