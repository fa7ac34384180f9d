package snapshots

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
)

// client is the scripted ACP client of the replay contract (§ 2), on the
// shared acpclient.Conn: ids from 0, each op awaited, scripted answers to
// permission and elicitation requests, every stdout byte recorded; and,
// for our scenarios, an editor's files (with unsaved buffers) and
// terminals when the scenario's client declares them.
type client struct {
	conn  *acpclient.Conn
	perms *acpclient.PermissionScript
	fs    *acpclient.FS        // nil unless the scenario's client has fs
	terms *acpclient.Terminals // nil unless it has a terminal
	mcp   *mcpServers          // the scenario's MCP servers (nil: none)
	caps  map[string]any       // clientCapabilities besides _meta

	mu         sync.Mutex
	elicits    []ElicitationAnswer
	sessionIDs []string
	sessionID  string
}

// frame is one response.
type frame struct {
	Result json.RawMessage
	// Error is the JSON-RPC error object, nil on success.
	Error json.RawMessage
}

// clientSetup is what a run's client is given besides its script.
type clientSetup struct {
	cwd     string
	env     []string // the base environment of terminal commands
	servers *mcpServers
}

func newClient(in io.WriteCloser, out io.Reader, input Input, setup clientSetup) *client {
	kinds := make([]string, len(input.PermissionAnswers))
	for i, a := range input.PermissionAnswers {
		kinds[i] = a.Kind
	}
	c := &client{perms: acpclient.NewPermissionScript(kinds...), mcp: setup.servers, caps: map[string]any{},
		elicits: append([]ElicitationAnswer(nil), input.ElicitationAnswers...)}
	opts := acpclient.Options{Handlers: map[string]acpclient.Handler{
		"session/request_permission": c.perms.Handler(),
		"elicitation/create":         c.elicitationAnswer,
	}}
	if cl := input.Client; cl != nil {
		if cl.FS || len(cl.Buffers) > 0 {
			c.fs = acpclient.NewFS(setup.cwd)
			for path, text := range cl.Buffers {
				if !filepath.IsAbs(path) {
					path = filepath.Join(setup.cwd, path)
				}
				c.fs.SetBuffer(path, text)
			}
			opts.FS = c.fs
			c.caps["fs"] = map[string]bool{"readTextFile": true, "writeTextFile": true}
		}
		if cl.Terminal {
			c.terms = &acpclient.Terminals{Env: setup.env}
			opts.Terminals = c.terms
			c.caps["terminal"] = true
		}
	}
	c.conn = acpclient.New(in, out, opts)
	return c
}

// elicitationAnswer pops the next scripted elicitation answer.
func (c *client) elicitationAnswer(context.Context, acpclient.Request) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.elicits) == 0 {
		return map[string]string{"action": "cancel"}, nil
	}
	a := c.elicits[0]
	c.elicits = c.elicits[1:]
	if a.Action != "accept" {
		return map[string]string{"action": "cancel"}, nil
	}
	content := struct {
		Choice json.RawMessage `json:"choice,omitempty"`
		Custom json.RawMessage `json:"custom,omitempty"`
	}{a.Choice, a.Custom}
	return struct {
		Action  string `json:"action"`
		Content any    `json:"content"`
	}{"accept", content}, nil
}

// scriptErr reports a scripted permission kind the agent did not offer
// (a scenario bug).
func (c *client) scriptErr() error {
	if err := c.perms.Err(); err != nil {
		return fmt.Errorf("scenario bug: %w", err)
	}
	return nil
}

// start sends a request and returns the call to await.
func (c *client) start(method string, params any) (*acpclient.Call, error) {
	return c.conn.Start(method, params)
}

// await waits for a call's response.
func await(ctx context.Context, k *acpclient.Call) (frame, error) {
	f, err := k.Wait(ctx)
	if err != nil {
		return frame{}, err
	}
	out := frame{Result: f.Result}
	if f.Error != nil {
		out.Error, _ = json.Marshal(f.Error)
	}
	return out, nil
}

// call sends a request and waits for its response.
func (c *client) call(ctx context.Context, method string, params any) (frame, error) {
	k, err := c.start(method, params)
	if err != nil {
		return frame{}, err
	}
	return await(ctx, k)
}

// notify sends a notification.
func (c *client) notify(method string, params any) error { return c.conn.Notify(method, params) }

// awaitChunk waits for an agent_message_chunk after the first n updates.
func (c *client) awaitChunk(ctx context.Context, n int) error {
	_, _, err := c.conn.WaitUpdate(ctx, n, func(u acpclient.Update) bool { return u.Kind == "agent_message_chunk" })
	return err
}

// timeline is every line exchanged so far, in order.
func (c *client) timeline() []Message {
	lines := c.conn.Transcript()
	out := make([]Message, len(lines))
	for i, l := range lines {
		out[i] = Message{Sent: l.Dir == acpclient.Sent, Line: bytes.TrimSpace(l.Data)}
	}
	return out
}

// recorded returns everything the agent wrote to stdout.
func (c *client) recorded() []byte { return c.conn.Output() }

// terminalEnv is the environment of the client's terminal commands in a
// run whose home is home: the runner's, with the run's home.
func terminalEnv(home string) []string { return append(os.Environ(), homeEnv(home)...) }
