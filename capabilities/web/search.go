package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// Hit is one web search result.
type Hit struct {
	Title   string
	URL     string
	Snippet string
}

// Provider answers web searches.
type Provider interface {
	// Search returns at most n results for query.
	Search(ctx context.Context, query string, n int) ([]Hit, error)
}

// Search is the web_search tool.
type Search struct{ opts Options }

type searchArgs struct {
	Query string   `json:"query"`
	Count *float64 `json:"count"`
}

// Name implements capabilities.Tool.
func (*Search) Name() string { return "web_search" }

// Traits implements capabilities.Tool: search providers limit their
// rate (a free plan answers about one query a second), so searches go
// one at a time.
func (*Search) Traits() capabilities.Traits {
	return capabilities.Traits{ReadOnly: true, Network: true, Sequential: true}
}

// Description implements capabilities.Tool.
func (*Search) Description() string {
	return "Search the web. Returns titles, URLs and snippets; read a result with web_fetch."
}

// Schema implements capabilities.Tool.
func (*Search) Schema() *capabilities.Schema {
	return capabilities.Object(
		capabilities.Req("query", capabilities.String("What to search for")),
		capabilities.Opt("count", capabilities.Number("How many results (default 8, at most 20)")),
	)
}

// PresentCall implements capabilities.CallPresenter.
func (*Search) PresentCall(args json.RawMessage) capabilities.CallView {
	var a searchArgs
	_ = json.Unmarshal(args, &a)
	return capabilities.CallView{Kind: capabilities.ViewGeneric, Title: "Web search " + strconv.Quote(a.Query), ToolKind: capabilities.ToolKindFetch, RawInput: args}
}

// Run implements capabilities.Tool.
func (s *Search) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var a searchArgs
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return capabilities.Result{}, fmt.Errorf("invalid arguments: %w", err)
	}
	if strings.TrimSpace(a.Query) == "" {
		return capabilities.Result{}, errors.New("query must be a non-empty string")
	}
	n := 8
	if a.Count != nil {
		n = max(1, min(20, int(*a.Count)))
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	hits, err := s.opts.Search.Search(ctx, a.Query, n)
	if err != nil {
		return capabilities.Result{}, fmt.Errorf("web search failed: %w", err)
	}
	if len(hits) == 0 {
		return capabilities.TextResult("No results."), nil
	}
	var b strings.Builder
	for i, h := range hits {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "%d. %s\n   %s", i+1, h.Title, h.URL)
		if h.Snippet != "" {
			fmt.Fprintf(&b, "\n   %s", h.Snippet)
		}
	}
	return capabilities.TextResult(b.String()), nil
}

// Brave is a Provider over the Brave Search API (an API key and HTTP,
// nothing else).
type Brave struct {
	// APIKey is the subscription token.
	APIKey string
	// BaseURL is the API root (default https://api.search.brave.com).
	BaseURL string
	// Client makes the requests (nil: http.DefaultClient).
	Client *http.Client
}

// Search implements Provider.
func (b *Brave) Search(ctx context.Context, query string, n int) ([]Hit, error) {
	base := b.BaseURL
	if base == "" {
		base = "https://api.search.brave.com"
	}
	client := b.Client
	if client == nil {
		client = http.DefaultClient
	}
	q := url.Values{"q": {query}, "count": {strconv.Itoa(n)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/res/v1/web/search?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", b.APIKey)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("brave search: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body[:min(len(body), 300)])))
	}
	var r struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("brave search: unreadable response: %w", err)
	}
	var hits []Hit
	for _, x := range r.Web.Results {
		if len(hits) == n {
			break
		}
		hits = append(hits, Hit{Title: x.Title, URL: x.URL, Snippet: x.Description})
	}
	return hits, nil
}
