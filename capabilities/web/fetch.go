package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
)

// Fetch is the web_fetch tool.
type Fetch struct {
	opts    Options
	origins approvals // allowed for the session
}

// fetchArgs are web_fetch's parameters.
type fetchArgs struct {
	URL       string   `json:"url"`
	Raw       bool     `json:"raw"`
	TimeoutMs *float64 `json:"timeoutMs"`
}

// Name implements capabilities.Tool.
func (*Fetch) Name() string { return "web_fetch" }

// Traits implements capabilities.Tool.
func (*Fetch) Traits() capabilities.Traits { return capabilities.Traits{ReadOnly: true, Network: true} }

// Description implements capabilities.Tool.
func (f *Fetch) Description() string {
	return fmt.Sprintf("Fetch a web page (HTTP or HTTPS GET) and return its readable content as markdown; text and JSON "+
		"come back as they are. At most %d MB are read. The first fetch from an origin (scheme, host and port) in a session "+
		"asks the user, and so does a redirect to another one; addresses on the user's machine or network are refused "+
		"unless the user approves them.", f.opts.MaxBytes>>20)
}

// Schema implements capabilities.Tool.
func (*Fetch) Schema() *capabilities.Schema {
	return capabilities.Object(
		capabilities.Req("url", capabilities.String("The http:// or https:// URL to fetch")),
		capabilities.Opt("raw", capabilities.Boolean("Return the whole page converted to markdown, without extracting the main article")),
		capabilities.Opt("timeoutMs", capabilities.Number("Time budget in milliseconds (default 30000)")),
	)
}

// PresentCall implements capabilities.CallPresenter: a fetch card.
func (*Fetch) PresentCall(args json.RawMessage) capabilities.CallView {
	var a fetchArgs
	_ = json.Unmarshal(args, &a)
	return capabilities.CallView{Kind: capabilities.ViewGeneric, Title: "Fetch " + a.URL, ToolKind: capabilities.ToolKindFetch, RawInput: args}
}

// Run implements capabilities.Tool.
func (f *Fetch) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var a fetchArgs
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return capabilities.Result{}, fmt.Errorf("invalid arguments: %w", err)
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return capabilities.Result{}, fmt.Errorf("invalid url %q: expected an absolute http:// or https:// URL", a.URL)
	}
	budget := f.opts.Timeout
	if a.TimeoutMs != nil {
		if *a.TimeoutMs <= 0 {
			return capabilities.Result{}, fmt.Errorf("invalid timeoutMs: expected a positive number, got %v", *a.TimeoutMs)
		}
		budget = min(time.Duration(*a.TimeoutMs*float64(time.Millisecond)), MaxTimeout)
	}
	scope := &approvals{} // what the user allowed once, for this fetch
	if err := f.permit(ctx, call, u, scope); err != nil {
		return capabilities.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	page, err := f.get(ctx, call, u, scope)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return capabilities.Result{}, fmt.Errorf("fetch %s timed out after %s and was stopped", u, budget)
		}
		return capabilities.Result{}, err
	}
	return capabilities.TextResult(page.render(ctx, f.opts.Markdown, a.Raw, f.opts.MaxBytes)), nil
}

// permit judges a request to u (the first one of a fetch, or a redirect
// hop): an origin allowed for the session, or for this fetch (scope),
// goes ahead; any other asks the user, saying when it is a private
// destination. "Always" allows the origin for the rest of the session,
// once for this fetch. Without an Approver every public origin goes
// ahead and a private one is refused, unless Options.AllowPrivate.
func (f *Fetch) permit(ctx context.Context, call *capabilities.Call, u *url.URL, scope *approvals) error {
	o := originOf(u)
	if ok, _ := f.origins.allowed(o); ok {
		return nil
	}
	if ok, _ := scope.allowed(o); ok {
		return nil
	}
	private := ""
	if !f.opts.AllowPrivate {
		private = f.privateDestination(ctx, o)
	}
	if f.opts.Approver == nil {
		if private != "" {
			return fmt.Errorf("fetch %s: refused: %s is %s, and there is no one to approve it", u, o, private)
		}
		return nil
	}
	if call.Session == nil || call.Session.Log() == nil {
		return fmt.Errorf("fetch %s: %s needs approval, and the call has no session to ask through", u, o)
	}
	reason := fmt.Sprintf("fetch %s: the first request to %s in this session", u, o)
	if private != "" {
		reason += fmt.Sprintf("; it is %s, on your machine or network, which a web page should not reach without you", private)
	}
	reason += fmt.Sprintf(" (\"always\" allows %s for the rest of the session)", o)
	out, err := f.opts.Approver.Request(ctx, call.Session.Log(), approval.Request{ToolName: "web_fetch", CallID: call.CallID,
		Reason: reason, Scope: approval.ScopeHost, Subject: o.String()})
	if err != nil {
		return fmt.Errorf("fetch %s: approval failed: %w", u, err)
	}
	switch out {
	case approval.AllowedAlways:
		f.origins.allow(o, private != "")
		return nil
	case approval.AllowedOnce:
		scope.allow(o, private != "")
		return nil
	case approval.Rejected:
		return fmt.Errorf("fetch %s: the user (or the approval policy \"never\") refused access to %s", u, o)
	case approval.Cancelled:
		return fmt.Errorf("fetch %s: the approval request was cancelled", u)
	}
	return fmt.Errorf("fetch %s: %s needs approval, and no approval channel is available", u, o)
}

// page is a fetched response.
type page struct {
	url         *url.URL
	status      int
	contentType string
	body        []byte
	cut         bool // the body was longer than the cap
}

// get fetches u, each redirect hop judged like a first request, every
// connection through the fetch's guarded dialer.
func (f *Fetch) get(ctx context.Context, call *capabilities.Call, u *url.URL, scope *approvals) (*page, error) {
	client := *f.opts.Client
	tr, err := guardedTransport(client.Transport)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u, err)
	}
	tr.DialContext = f.dialer(scope)
	defer tr.CloseIdleConnections()
	client.Transport = tr
	redirects := 0
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		redirects++
		if redirects > f.opts.MaxRedirects {
			return fmt.Errorf("stopped after %d redirects (last to %s)", f.opts.MaxRedirects, req.URL)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return &crossHost{to: req.URL, err: errors.New("not an http:// or https:// URL")}
		}
		if err := f.permit(req.Context(), call, req.URL, scope); err != nil {
			return &crossHost{to: req.URL, err: err}
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u, err)
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain,application/json;q=0.9,*/*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		var ch *crossHost
		if errors.As(err, &ch) {
			return nil, fmt.Errorf("fetch %s: redirected to %s, which was not followed: %w", u, ch.to, ch.err)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("fetch %s: %w", u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: reading the body: %w", u, err)
	}
	p := &page{url: resp.Request.URL, status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body}
	if int64(len(body)) > f.opts.MaxBytes {
		p.body, p.cut = body[:f.opts.MaxBytes], true
	}
	return p, nil
}

// crossHost stops a redirect the hop check refused.
type crossHost struct {
	to  *url.URL
	err error
}

func (c *crossHost) Error() string {
	return "redirect to " + c.to.String() + " refused: " + c.err.Error()
}

// guardedTransport is a fresh copy of the client's transport for one
// fetch, to get the fetch's dialer: no proxy (it would dial for us,
// unchecked) and no connection shared with another fetch.
func guardedTransport(rt http.RoundTripper) (*http.Transport, error) {
	base, ok := rt.(*http.Transport)
	switch {
	case rt == nil:
		base = http.DefaultTransport.(*http.Transport)
	case !ok:
		return nil, errors.New("the HTTP client's transport cannot be guarded (not an *http.Transport)")
	}
	tr := base.Clone()
	tr.Proxy = nil
	return tr, nil
}

// render turns the page into the tool's text.
func (p *page) render(ctx context.Context, convert Markdown, raw bool, limit int64) string {
	media, params, _ := mime.ParseMediaType(p.contentType)
	if media == "" {
		media = http.DetectContentType(p.body)
		media, params, _ = mime.ParseMediaType(media)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\n", p.url)
	if p.status != http.StatusOK {
		fmt.Fprintf(&b, "Status: %d %s\n", p.status, http.StatusText(p.status))
	}
	var body string
	switch {
	case media == "text/html" || media == "application/xhtml+xml":
		title, md := markdown(ctx, convert, p.body, p.url, raw)
		if title != "" {
			fmt.Fprintf(&b, "Title: %s\n", title)
		}
		body = md
	case textual(media):
		body = decode(p.body, params["charset"])
	default:
		fmt.Fprintf(&b, "\n[binary content (%s, %s) not shown]", media, size(len(p.body), p.cut))
		return b.String()
	}
	if !utf8.ValidString(body) || bytes.IndexByte(p.body[:min(len(p.body), 8192)], 0) >= 0 {
		fmt.Fprintf(&b, "\n[binary content (%s, %s) not shown]", media, size(len(p.body), p.cut))
		return b.String()
	}
	b.WriteString("\n")
	b.WriteString(strings.TrimSpace(body))
	if p.cut {
		fmt.Fprintf(&b, "\n\n[page cut: only the first %d bytes were read]", limit)
	}
	return b.String()
}

func size(n int, cut bool) string {
	if cut {
		return fmt.Sprintf("more than %d bytes", n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// textual reports whether a media type is shown as text.
func textual(media string) bool {
	switch {
	case strings.HasPrefix(media, "text/"):
		return true
	case media == "application/json", media == "application/xml", media == "application/javascript",
		strings.HasSuffix(media, "+json"), strings.HasSuffix(media, "+xml"):
		return true
	}
	return false
}

// decode returns body as text; non-UTF-8 bytes are replaced.
func decode(body []byte, _ string) string {
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// markdown converts the page with convert, or shows its text when there
// is no converter or the conversion failed.
func markdown(ctx context.Context, convert Markdown, body []byte, u *url.URL, raw bool) (title, md string) {
	if convert != nil {
		if title, md, err := convert(ctx, body, u, raw); err == nil {
			return title, md
		}
	}
	return "", strings.ToValidUTF8(string(body), "\uFFFD")
}
