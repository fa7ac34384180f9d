package mockllm

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// discard is a ResponseWriter that drops the body.
type discard struct {
	h http.Header
	n int64
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}

// BenchmarkStreamChunks measures the mock's own cost per streamed chunk in
// each dialect (a 10k-chunk MOCK:CHUNKS reply into a discarding writer),
// the baseline the agent's throughput is compared with.
func BenchmarkStreamChunks(b *testing.B) {
	const n = 10_000
	for _, c := range []struct{ name, path, body string }{
		{"openai", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"MOCK:CHUNKS=10000"}]}`},
		{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"MOCK:CHUNKS=10000"}`},
		{"anthropic", "/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"MOCK:CHUNKS=10000"}]}`},
		{"gemini", "/v1beta/models/m:streamGenerateContent", `{"contents":[{"role":"user","parts":[{"text":"MOCK:CHUNKS=10000"}]}]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := New(Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var bytes int64
			for b.Loop() {
				w := &discard{h: http.Header{}}
				s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body)))
				bytes = w.n
			}
			b.SetBytes(bytes)
			b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "chunks/s")
		})
	}
}
