package deepseek

import (
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
)

// Warm opens the connection to the API ahead of the first model call (a
// cheap authenticated GET of the model list), so the first prompt of a
// session does not pay for the TCP and TLS handshakes. Failures are
// ignored: the real call reports them.
func (p *Provider) Warm(ctx context.Context) {
	// Encode a request once so the first real one finds warm caches.
	_, _ = buildBody(&llm.Request{Config: llm.Config{Model: "warm"}, System: "warm",
		Messages: []llm.Message{{Role: "user", Content: []session.Block{session.TextBlock("warm")}}}}, p.opts)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(p.baseURL, "/")+"/models", nil)
	if err != nil {
		return
	}
	req.Header.Set("authorization", "Bearer "+p.apiKey)
	req.Header.Set("user-agent", p.userAgent)
	resp, err := p.client.Do(req)
	if err != nil {
		return
	}
	// Drain a bounded amount so the connection returns to the pool.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
}
