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
	domains domains
}

// fetchArgs are web_fetch's parameters.
type fetchArgs struct {
	URL       string   `json:"url"`
	Raw       bool     `json:"raw"`
	TimeoutMs *float64 `json:"timeoutMs"`
}

// Name implements capabilities.Tool.
func (*Fetch) Name() string { return "web_fetch" }

// Description implements capabilities.Tool.
func (f *Fetch) Description() string {
	return fmt.Sprintf("Fetch a web page (HTTP or HTTPS GET) and return its readable content as markdown; text and JSON "+
		"come back as they are. At most %d MB are read and redirects are followed within the same host only. The first "+
		"fetch from a domain in a session asks the user.", f.opts.MaxBytes>>20)
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
	if err := f.permit(ctx, call, u); err != nil {
		return capabilities.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	page, err := f.get(ctx, u)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return capabilities.Result{}, fmt.Errorf("fetch %s timed out after %s and was stopped", u, budget)
		}
		return capabilities.Result{}, err
	}
	return capabilities.TextResult(page.render(ctx, f.opts.Markdown, a.Raw, f.opts.MaxBytes)), nil
}

// permit asks the user before the first fetch from u's host in the
// session; "always" allows the host for the rest of the session.
func (f *Fetch) permit(ctx context.Context, call *capabilities.Call, u *url.URL) error {
	host := u.Hostname()
	if f.opts.Approver == nil || f.domains.allowed(host) {
		return nil
	}
	if call.Session == nil || call.Session.Log() == nil {
		return fmt.Errorf("fetch %s: %s needs approval, and the call has no session to ask through", u, host)
	}
	out, err := f.opts.Approver.Request(ctx, call.Session.Log(), approval.Request{ToolName: "web_fetch", CallID: call.CallID,
		Reason: fmt.Sprintf("fetch %s: the first request to %s in this session (\"always\" allows %s for the rest of the session)", u, host, host),
		Scope:  approval.ScopeHost, Subject: host})
	if err != nil {
		return fmt.Errorf("fetch %s: approval failed: %w", u, err)
	}
	switch out {
	case approval.AllowedAlways:
		f.domains.allow(host)
		return nil
	case approval.AllowedOnce:
		return nil
	case approval.Rejected:
		return fmt.Errorf("fetch %s: the user (or the approval policy \"never\") refused access to %s", u, host)
	case approval.Cancelled:
		return fmt.Errorf("fetch %s: the approval request was cancelled", u)
	}
	return fmt.Errorf("fetch %s: %s needs approval, and no approval channel is available", u, host)
}

// page is a fetched response.
type page struct {
	url         *url.URL
	status      int
	contentType string
	body        []byte
	cut         bool // the body was longer than the cap
}

// get fetches u, following redirects within its host.
func (f *Fetch) get(ctx context.Context, u *url.URL) (*page, error) {
	client := *f.opts.Client
	redirects := 0
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		redirects++
		if redirects > f.opts.MaxRedirects {
			return fmt.Errorf("stopped after %d redirects (last to %s)", f.opts.MaxRedirects, req.URL)
		}
		if req.URL.Hostname() != u.Hostname() {
			return &crossHost{to: req.URL}
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
			return nil, fmt.Errorf("fetch %s: redirected to another host, %s; fetch that URL to follow it", u, ch.to)
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

// crossHost stops a redirect to another host.
type crossHost struct{ to *url.URL }

func (c *crossHost) Error() string { return "redirect to another host: " + c.to.String() }

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
