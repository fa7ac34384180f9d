package deepseek

import (
	"context"
	"io"
	"net/http"
	"strings"
)

// Warm opens the connection to the API ahead of the first model call (a
// cheap authenticated GET of the model list), so the first prompt of a
// session does not pay for the TCP and TLS handshakes. Failures are
// ignored: the real call reports them.
func (p *Provider) Warm(ctx context.Context) {
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
