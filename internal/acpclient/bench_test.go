package acpclient_test

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
)

// chunkLines is n agent_message_chunk notifications as an agent streams
// them, then the prompt's response (id 0).
func chunkLines(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk %d of the answer "}}}}`+"\n", i)
	}
	b.WriteString(`{"jsonrpc":"2.0","id":0,"result":{"stopReason":"end_turn"}}` + "\n")
	return b.Bytes()
}

// BenchmarkReceive measures the client's receive path per streamed chunk
// line (one op), read from memory: the read loop, the line's handling and
// the wake-up of waiters. "fast" is acpbench's mode (NoTranscript, every
// chunk taken by OnReceive); "dispatch" has no transcript and no
// OnReceive; "transcript" keeps every line and update, as tests do;
// "bare" is the floor, a hand-rolled bufio loop calling the same fast
// function.
func BenchmarkReceive(b *testing.B) {
	fast := func(line []byte, _ time.Time) bool {
		return bytes.Contains(line[:min(len(line), 64)], []byte(`"session/update"`))
	}
	b.Run("bare", func(b *testing.B) {
		in := chunkLines(b.N)
		b.ReportAllocs()
		b.SetBytes(int64(len(in) / (b.N + 1)))
		b.ResetTimer()
		br := bufio.NewReaderSize(bytes.NewReader(in), 64<<10)
		n := 0
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 0 {
				n++
				fast(bytes.TrimSuffix(line, []byte("\n")), time.Now())
			}
			if err != nil {
				break
			}
		}
		b.StopTimer()
		if n != b.N+1 {
			b.Fatalf("read %d lines, want %d", n, b.N+1)
		}
	})
	for _, bc := range []struct {
		name string
		opts acpclient.Options
	}{
		{"fast", acpclient.Options{NoTranscript: true, OnReceive: fast}},
		{"dispatch", acpclient.Options{NoTranscript: true}},
		{"transcript", acpclient.Options{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := chunkLines(b.N)
			b.ReportAllocs()
			b.SetBytes(int64(len(in) / (b.N + 1)))
			b.ResetTimer()
			c := acpclient.New(nopCloser{}, bytes.NewReader(in), bc.opts)
			<-c.Done()
			b.StopTimer()
			if c.Len() != b.N+1 {
				b.Fatalf("received %d lines, want %d", c.Len(), b.N+1)
			}
		})
	}
}
