package acpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
	"github.com/dsh-acp/dsh-acp/internal/acpschema"
)

// The tiny agent of these tests is itself an acpclient.Conn (JSON-RPC is
// symmetric): it answers initialize, session/new and session/prompt, and a
// prompt's text is a script of requests it sends the client in order; each
// response comes back as an agent_message_chunk holding the response line.

// TestMain lets the test binary serve as the spawned agent.
func TestMain(m *testing.M) {
	if os.Getenv("ACPCLIENT_TEST_AGENT") == "1" {
		_ = tinyAgent(context.Background(), os.Stdin, os.Stdout)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// waitFor bounds every wait of these tests.
const waitFor = 10 * time.Second

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return c
}

// step is one request of a prompt's script.
type step struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// tinyAgent serves until its input ends.
func tinyAgent(_ context.Context, r io.Reader, w io.Writer) error {
	var agent *acpclient.Conn
	ready := make(chan struct{}) // agent is set
	var mu sync.Mutex
	sessions := 0
	agent = acpclient.New(nopCloser{w}, r, acpclient.Options{Handlers: map[string]acpclient.Handler{
		"initialize": func(context.Context, acpclient.Request) (any, error) {
			return map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{}, "authMethods": []any{}}, nil
		},
		"session/new": func(context.Context, acpclient.Request) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			sessions++
			return map[string]any{"sessionId": fmt.Sprintf("s%d", sessions)}, nil
		},
		"session/prompt": func(ctx context.Context, req acpclient.Request) (any, error) {
			var p struct {
				SessionID string `json:"sessionId"`
				Prompt    []struct {
					Text string `json:"text"`
				} `json:"prompt"`
			}
			if err := json.Unmarshal(req.Params, &p); err != nil || len(p.Prompt) == 0 {
				return nil, &acpclient.Error{Code: acpclient.CodeInvalidParams, Message: "Invalid params"}
			}
			var script []step
			_ = json.Unmarshal([]byte(p.Prompt[0].Text), &script)
			return acpclient.Deferred(func() (any, error) {
				<-ready
				for _, s := range script {
					k, err := agent.Start(s.Method, s.Params)
					if err != nil {
						return nil, err
					}
					f, err := k.Wait(ctx)
					if err != nil {
						return nil, err
					}
					_ = agent.Notify("session/update", map[string]any{"sessionId": p.SessionID,
						"update": map[string]any{"sessionUpdate": "agent_message_chunk",
							"content": map[string]any{"type": "text", "text": string(f.Raw)}}})
				}
				return map[string]string{"stopReason": "end_turn"}, nil
			}), nil
		},
	}})
	close(ready)
	<-agent.Done()
	return nil
}

// connect serves a tiny agent over pipes with opts and initializes it.
func connect(t *testing.T, opts acpclient.Options) *acpclient.Conn {
	t.Helper()
	if opts.Schema == nil {
		opts.Schema = schema(t)
	}
	c := acpclient.Serve(tinyAgent, opts)
	t.Cleanup(func() {
		_ = c.CloseWrite()
		select {
		case <-c.Stopped():
		case <-time.After(waitFor):
			t.Errorf("the agent did not stop within %v of EOF", waitFor)
		}
		c.Report(t)
	})
	_, err := c.Initialize(ctx(t))
	require.NoError(t, err)
	return c
}

var (
	schemaOnce sync.Once
	schemaVal  *acpschema.Validator
	schemaErr  error
)

// schema is the ACP schema.
func schema(t *testing.T) *acpschema.Validator {
	t.Helper()
	schemaOnce.Do(func() { schemaVal, schemaErr = acpschema.Stable() })
	require.NoError(t, schemaErr)
	return schemaVal
}

// run prompts session sid with script and returns the response line of
// each step, in order.
func run(t *testing.T, c *acpclient.Conn, sid string, script ...step) []string {
	t.Helper()
	text, err := json.Marshal(script)
	require.NoError(t, err)
	from := len(c.Updates())
	res, err := c.Call(ctx(t), "session/prompt", map[string]any{"sessionId": sid,
		"prompt": []any{map[string]any{"type": "text", "text": string(text)}}})
	require.NoError(t, err)
	require.JSONEq(t, `{"stopReason":"end_turn"}`, string(res))
	var out []string
	for _, u := range c.Updates()[from:] {
		if u.SessionID != sid {
			continue
		}
		var chunk struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		require.NoError(t, json.Unmarshal(u.Raw, &chunk))
		out = append(out, chunk.Content.Text)
	}
	require.Len(t, out, len(script))
	return out
}

func newSession(t *testing.T, c *acpclient.Conn) string {
	t.Helper()
	res, err := c.Call(ctx(t), "session/new", map[string]any{"cwd": "/", "mcpServers": []any{}})
	require.NoError(t, err)
	var r struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(res, &r))
	return r.SessionID
}
