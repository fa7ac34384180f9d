package snapshots

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// client is the scripted ACP client of the replay contract (§ 2): ids from
// 0, each op awaited, scripted answers to permission and elicitation
// requests, every stdout byte recorded.
type client struct {
	in io.WriteCloser

	wmu sync.Mutex // serializes writes to the agent

	mu          sync.Mutex
	stdout      bytes.Buffer
	timeline    []Message
	nextID      int
	pending     map[string]chan frame
	chunks      int
	chunkSignal chan struct{}
	mcp         *mcpServers // the scenario's MCP servers (nil: none)
	perms       []PermissionAnswer
	elicits     []ElicitationAnswer
	scriptErr   error
	sessionIDs  []string
	sessionID   string
	readErr     error
	readDone    chan struct{}
}

// frame is one inbound message.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func newClient(in io.WriteCloser, out io.Reader, input Input, servers *mcpServers) *client {
	c := &client{in: in, pending: map[string]chan frame{}, chunkSignal: make(chan struct{}, 1), mcp: servers,
		perms: append([]PermissionAnswer(nil), input.PermissionAnswers...), elicits: append([]ElicitationAnswer(nil), input.ElicitationAnswers...),
		readDone: make(chan struct{})}
	go c.read(out)
	return c
}

// read records and dispatches the agent's stdout until it ends.
func (c *client) read(out io.Reader) {
	defer close(c.readDone)
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			c.mu.Lock()
			c.stdout.Write(line)
			c.timeline = append(c.timeline, Message{Line: bytes.TrimSpace(line)})
			c.mu.Unlock()
			c.dispatch(bytes.TrimSpace(line))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.mu.Lock()
				c.readErr = err
				c.mu.Unlock()
			}
			c.mu.Lock()
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
	}
}

func (c *client) dispatch(line []byte) {
	if len(line) == 0 {
		return
	}
	var f frame
	if json.Unmarshal(line, &f) != nil {
		return // stdout purity is checked by the normalizer
	}
	hasID := len(f.ID) > 0 && string(f.ID) != "null"
	switch {
	case f.Method != "" && hasID:
		c.answerAgent(f)
	case f.Method != "":
		if f.Method == "session/update" {
			var p struct {
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
				} `json:"update"`
			}
			if json.Unmarshal(f.Params, &p) == nil && p.Update.SessionUpdate == "agent_message_chunk" {
				c.mu.Lock()
				c.chunks++
				c.mu.Unlock()
				select {
				case c.chunkSignal <- struct{}{}:
				default:
				}
			}
		}
	default:
		c.mu.Lock()
		ch := c.pending[string(f.ID)]
		delete(c.pending, string(f.ID))
		c.mu.Unlock()
		if ch != nil {
			ch <- f
		}
	}
}

// answerAgent answers an agent→client request from the script.
func (c *client) answerAgent(f frame) {
	var result any
	switch f.Method {
	case "session/request_permission":
		result = c.permissionAnswer(f.Params)
	case "elicitation/create":
		result = c.elicitationAnswer()
	default:
		c.send(map[string]any{"jsonrpc": "2.0", "id": f.ID, "error": map[string]any{"code": -32601, "message": "Method not found: " + f.Method}})
		return
	}
	c.send(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", f.ID, result})
}

type outcome struct {
	Outcome  string `json:"outcome"`
	OptionID string `json:"optionId,omitempty"`
}

func (c *client) permissionAnswer(params json.RawMessage) any {
	cancelled := map[string]any{"outcome": outcome{Outcome: "cancelled"}}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.perms) == 0 {
		return cancelled
	}
	want := c.perms[0]
	c.perms = c.perms[1:]
	var p struct {
		Options []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	_ = json.Unmarshal(params, &p)
	for _, o := range p.Options {
		if o.Kind == want.Kind {
			return map[string]any{"outcome": outcome{Outcome: "selected", OptionID: o.OptionID}}
		}
	}
	c.scriptErr = fmt.Errorf("scenario bug: no offered permission option has kind %q", want.Kind)
	return cancelled
}

func (c *client) elicitationAnswer() any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.elicits) == 0 {
		return map[string]string{"action": "cancel"}
	}
	a := c.elicits[0]
	c.elicits = c.elicits[1:]
	if a.Action != "accept" {
		return map[string]string{"action": "cancel"}
	}
	content := struct {
		Choice json.RawMessage `json:"choice,omitempty"`
		Custom json.RawMessage `json:"custom,omitempty"`
	}{a.Choice, a.Custom}
	return struct {
		Action  string `json:"action"`
		Content any    `json:"content"`
	}{"accept", content}
}

// send writes one message to the agent.
func (c *client) send(v any) {
	b, err := jsonx.Marshal(v)
	if err != nil {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	c.timeline = append(c.timeline, Message{Sent: true, Line: b})
	c.mu.Unlock()
	_, _ = c.in.Write(append(b, '\n'))
}

// request sends a request and returns a channel for its response.
func (c *client) request(method string, params any) <-chan frame {
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	ch := make(chan frame, 1)
	c.pending[fmt.Sprint(id)] = ch
	c.mu.Unlock()
	c.send(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", id, method, params})
	return ch
}

// await waits for a response.
func await(ctx context.Context, ch <-chan frame, what string) (frame, error) {
	select {
	case f, ok := <-ch:
		if !ok {
			return frame{}, fmt.Errorf("%s: the agent closed its stdout before answering", what)
		}
		return f, nil
	case <-ctx.Done():
		return frame{}, fmt.Errorf("%s: no answer before the scenario timeout", what)
	}
}

// call sends a request and waits for its response.
func (c *client) call(ctx context.Context, method string, params any) (frame, error) {
	return await(ctx, c.request(method, params), method)
}

// recorded returns everything the agent wrote to stdout.
func (c *client) recorded() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.stdout.Bytes())
}
