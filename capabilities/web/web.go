// Package web holds the web tools: web_fetch (an HTTP(S) GET with size
// and time caps, HTML turned into markdown, asked for per origin, private
// destinations refused unless approved as such) and
// web_search (behind a Provider; mounted only when one is configured).
package web

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// Defaults of the caps (Options zero fields).
const (
	// DefaultMaxBytes is how much of a response body is read.
	DefaultMaxBytes = 5 << 20
	// DefaultTimeout is a fetch's time budget.
	DefaultTimeout = 30 * time.Second
	// MaxTimeout caps a call's timeoutMs.
	MaxTimeout = 2 * time.Minute
	// DefaultMaxRedirects is how many redirects a fetch follows.
	DefaultMaxRedirects = 5
)

// Approver asks the user to approve an action (approval.Service, which
// applies the session's approval policy and logs the question and the
// decision).
type Approver interface {
	Request(ctx context.Context, log *session.Log, req approval.Request) (approval.Outcome, error)
}

// Options configure the web tools. Zero fields take the defaults.
type Options struct {
	// Approver asks before a domain is fetched for the first time in the
	// session (nil: every domain may be fetched).
	Approver Approver
	// Client makes the requests (nil: a client without its own timeout;
	// the budget is the request's context).
	Client *http.Client
	// MaxBytes caps the bytes read of one response body.
	MaxBytes int64
	// Timeout is the default budget of one fetch.
	Timeout time.Duration
	// MaxRedirects caps the redirects a fetch follows.
	MaxRedirects int
	// UserAgent is sent with every request.
	UserAgent string
	// Search answers web_search (nil: the tool is not mounted).
	Search Provider
	// Markdown converts HTML pages (package htmlmd, in the program
	// worker; nil: pages come back as their HTML text).
	Markdown Markdown
	// Resolver looks up the hosts fetched (nil: net.DefaultResolver).
	// Private destinations are judged on what it returns.
	Resolver Resolver
	// Dialer connects to the addresses resolved (nil: a net.Dialer whose
	// Control hook checks the address actually connected to).
	Dialer Dialer
	// AllowPrivate lets fetches reach private destinations (loopback,
	// link-local, private networks, cloud metadata, local names) without
	// an approval. Otherwise such a destination asks the Approver, and
	// without one it is refused.
	AllowPrivate bool
}

// Markdown turns an HTML page into its title and markdown (raw: the whole
// page, not only its article).
type Markdown func(ctx context.Context, body []byte, u *url.URL, raw bool) (title, md string, err error)

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.UserAgent == "" {
		o.UserAgent = "dsh-acp (web_fetch)"
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	return o
}

// New returns web_fetch, and web_search when a provider is configured.
// Construct the tools once per session: allowed domains are remembered
// for the session.
func New(o Options) []capabilities.Tool {
	o = o.withDefaults()
	tools := []capabilities.Tool{&Fetch{opts: o}}
	if o.Search != nil {
		tools = append(tools, &Search{opts: o})
	}
	return tools
}
