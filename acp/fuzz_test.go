package acp

// Fuzz targets of the wire; `go test` runs their seed corpora
// (testdata/fuzz/<target>), `go test -fuzz=<target>` explores further.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// FuzzLineStream feeds arbitrary input to the line stream: it never
// panics, every message it hands on is a JSON object the library can take,
// and everything it answers itself is one JSON-RPC error frame per line.
func FuzzLineStream(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		s := NewLineStream(bytes.NewReader(in), &out, nil, zerolog.Nop())
		s.SetMaxLine(1 << 10) // small, so oversized lines are explored too
		o := newObjectStream(s)
		for range len(in) + 1 {
			var m json.RawMessage
			err := o.ReadObject(&m)
			if err != nil {
				require.ErrorIs(t, err, io.EOF)
				break
			}
			var probe struct {
				JSONRPC string           `json:"jsonrpc"`
				ID      *json.RawMessage `json:"id"`
				Method  *string          `json:"method"`
				Meta    *json.RawMessage `json:"meta"`
			}
			require.NoError(t, json.Unmarshal(m, &probe), "handed on: %s", m)
			if probe.Method != nil {
				require.Equal(t, "2.0", probe.JSONRPC)
				p, ok := o.takeParams(probe.Meta)
				require.Equal(t, probe.Meta != nil, ok)
				if ok {
					require.True(t, json.Valid(p), "params are valid JSON: %s", p)
				}
			}
		}
		require.NoError(t, s.Flush())
		if out.Len() == 0 {
			return
		}
		require.True(t, bytes.HasSuffix(out.Bytes(), []byte("\n")))
		for _, line := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			var fr struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *Error          `json:"error"`
			}
			require.NoError(t, json.Unmarshal(line, &fr), "frame: %s", line)
			require.Equal(t, "2.0", fr.JSONRPC)
			require.NotNil(t, fr.Error, "the stream only ever answers with errors: %s", line)
			require.True(t, validID(fr.ID), "answered id %s", fr.ID)
			require.True(t, bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":`)), "key order: %s", line)
		}
	})
}

// FuzzEnvelope checks the allocation-free scan against encoding/json: on
// any valid JSON object it finds exactly the members a map decode finds,
// and on anything else (truncated heads included) it never panics.
func FuzzEnvelope(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		env, complete, ok := scanEnvelope(in)
		trimmed := bytes.TrimLeft(in, " \t\r\n")
		if !json.Valid(in) || len(trimmed) == 0 || trimmed[0] != '{' {
			return
		}
		require.True(t, ok && complete, "a valid object scans completely")
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(in, &m))
		for key, got := range map[string][]byte{"jsonrpc": env.jsonrpc, "id": env.id, "method": env.method, "params": env.params, "result": env.result, "error": env.error} {
			want, present := m[key]
			require.Equal(t, present, got != nil, "key %s", key)
			if present {
				require.Equal(t, string(want), string(got), "key %s", key)
			}
		}
	})
}

// FuzzHandlers drives every method's decoder and handler with arbitrary
// params, as requests and as notifications: no panic, and the reply is
// exactly one JSON-RPC response for a request (none for a notification),
// every written frame valid against the ACP schema.
func FuzzHandlers(f *testing.F) {
	schema := loadACPSchema(f)
	f.Fuzz(func(t *testing.T, method string, params []byte, notify bool) {
		if !json.Valid(params) || bytes.Contains(params, []byte("#block")) {
			return // params always come from a valid line; #block parks the fake turn
		}
		srv, fa := NewFakeServer(Options{Features: Features{ListSessions: true, ClearErrors: true}, MaxPromptBytes: 1 << 10})
		fa.Knobs = map[string]string{"sandbox-mode": "read-only", "approval-policy": "ask"}
		fa.Modes = []string{"default", "plan"}
		fa.Store("stored-1", "/w", "earlier")
		var out syncBuffer
		srv.stream = NewLineStream(strings.NewReader(""), &out, nil, zerolog.Nop())
		ctx := context.Background()
		if _, err := srv.newSession(ctx, &request{id: RequestID{json.RawMessage("1")}, method: MethodSessionNew, params: json.RawMessage(`{"cwd":"/w","mcpServers":[]}`)}); err != nil {
			t.Fatal(err)
		}
		p := json.RawMessage(params)
		if notify {
			srv.handleNotification(ctx, method, p)
		} else {
			srv.handle(ctx, RequestID{json.RawMessage("7")}, method, p)
		}
		srv.work.Wait()
		srv.teardown(ctx)
		require.NoError(t, srv.stream.Flush())
		answers := 0
		for _, line := range out.lines() {
			var fr struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			require.NoError(t, json.Unmarshal(line, &fr), "frame: %s", line)
			m := fr.Method
			if m == "" {
				require.Equal(t, "7", string(fr.ID), "only the request is answered: %s", line)
				answers++
				m = method
			}
			if err := schema.CheckFrame(line, m); err != nil {
				t.Fatalf("frame fails the ACP contract: %v\nframe: %s", err, line)
			}
		}
		if notify {
			require.Zero(t, answers, "a notification is never answered")
		} else {
			require.Equal(t, 1, answers, "a request is answered exactly once")
		}
	})
}

// syncBuffer collects the stream's output (written by its writer
// goroutine).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := bytes.TrimSuffix(b.buf.Bytes(), []byte("\n"))
	if len(s) == 0 {
		return nil
	}
	return bytes.Split(append([]byte(nil), s...), []byte("\n"))
}
