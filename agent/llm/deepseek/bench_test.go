package deepseek

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkStream measures a whole model call over loopback HTTP: the
// request, the response through the provider's transport and timers, SSE
// parsing and translation of a 10k-delta stream written in 4 KiB flushes;
// chunks/s counts emitted chunks.
func BenchmarkStream(b *testing.B) {
	stream := deltaStream(10_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for rest := stream; len(rest) > 0; {
			n := min(4096, len(rest))
			if _, err := w.Write(rest[:n]); err != nil {
				return
			}
			f.Flush()
			rest = rest[n:]
		}
	}))
	defer srv.Close()
	p := New(Config{BaseURL: srv.URL, APIKey: "k"})
	req := simpleRequest()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	chunks := 0
	for b.Loop() {
		for _, err := range p.Stream(context.Background(), req) {
			if err != nil {
				b.Fatal(err)
			}
			chunks++
		}
	}
	b.ReportMetric(float64(chunks)/b.Elapsed().Seconds(), "chunks/s")
}
