package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// runSteps executes the scenario's ops in order against the agent.
func (c *client) runSteps(ctx context.Context, cwd string, steps []Step) error {
	for i, st := range steps {
		if err := c.step(ctx, cwd, st); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, st.Op, err)
		}
		if serr := c.scriptErr(); serr != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, st.Op, serr)
		}
	}
	return nil
}

func (c *client) needSession() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessionID == "" {
		return "", errors.New("harness error: the step needs a session but no newSession ran before it")
	}
	return c.sessionID, nil
}

func (c *client) step(ctx context.Context, cwd string, st Step) error {
	switch st.Op {
	case "initialize":
		caps := map[string]any{}
		for k, v := range c.caps {
			caps[k] = v
		}
		if st.TerminalOutput {
			caps["_meta"] = map[string]bool{"terminal_output": true}
		}
		_, err := c.call(ctx, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps})
		return err
	case "newSession", "newSessionExpectError":
		params := struct {
			Cwd                   string   `json:"cwd"`
			MCPServers            []any    `json:"mcpServers"`
			AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
		}{cwd, c.mcp.wire(), st.AdditionalDirectories}
		f, err := c.call(ctx, "session/new", params)
		if err != nil {
			return err
		}
		if st.Op == "newSessionExpectError" {
			return expectError(f)
		}
		if f.Error != nil {
			return fmt.Errorf("session/new failed: %s", f.Error)
		}
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(f.Result, &r); err != nil || r.SessionID == "" {
			return fmt.Errorf("session/new returned no sessionId: %s", f.Result)
		}
		c.mu.Lock()
		c.sessionID = r.SessionID
		c.sessionIDs = append(c.sessionIDs, r.SessionID)
		c.mu.Unlock()
		return nil
	case "loadSession":
		id := st.SessionID
		if id == "" {
			var err error
			if id, err = c.needSession(); err != nil {
				return err
			}
		}
		f, err := c.call(ctx, "session/load", map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": c.mcp.wire()})
		if err != nil {
			return err
		}
		if f.Error != nil {
			return fmt.Errorf("session/load failed: %s", f.Error)
		}
		c.mu.Lock()
		c.sessionID = id
		c.mu.Unlock()
		return nil
	case "prompt", "promptExpectError":
		sid, err := c.needSession()
		if err != nil {
			return err
		}
		params := promptParams(sid, st.Text)
		if len(st.Prompt) > 0 {
			params = map[string]any{"sessionId": sid, "prompt": json.RawMessage(strings.ReplaceAll(string(st.Prompt), "{{cwd}}", cwd))}
		}
		f, err := c.call(ctx, "session/prompt", params)
		if err != nil {
			return err
		}
		if st.Op == "promptExpectError" {
			return expectError(f)
		}
		return nil
	case "promptAndCancel":
		sid, err := c.needSession()
		if err != nil {
			return err
		}
		before := len(c.conn.Updates())
		k, err := c.start("session/prompt", promptParams(sid, st.Text))
		if err != nil {
			return err
		}
		if err := c.awaitChunk(ctx, before); err != nil {
			return fmt.Errorf("no agent_message_chunk arrived: %w", err)
		}
		if err := c.notify("session/cancel", map[string]string{"sessionId": sid}); err != nil {
			return err
		}
		_, err = await(ctx, k)
		return err
	case "crashMcpServer":
		return c.mcp.crash(st.Server)
	case "cancel":
		sid, err := c.needSession()
		if err != nil {
			return err
		}
		return c.notify("session/cancel", map[string]string{"sessionId": sid})
	case "setConfigOption", "setConfigOptionExpectError":
		sid, err := c.needSession()
		if err != nil {
			return err
		}
		f, err := c.call(ctx, "session/set_config_option", map[string]any{"sessionId": sid, "configId": st.ConfigID, "value": st.Value})
		if err != nil {
			return err
		}
		if st.Op == "setConfigOptionExpectError" {
			return expectError(f)
		}
		return nil
	case "setMode", "setModeExpectError":
		sid, err := c.needSession()
		if err != nil {
			return err
		}
		f, err := c.call(ctx, "session/set_mode", map[string]any{"sessionId": sid, "modeId": st.ModeID})
		if err != nil {
			return err
		}
		if st.Op == "setModeExpectError" {
			return expectError(f)
		}
		return nil
	}
	return fmt.Errorf("harness error: unknown op %q", st.Op)
}

func expectError(f frame) error {
	if f.Error == nil {
		return fmt.Errorf("expected an error, got result %s", f.Result)
	}
	return nil
}

func promptParams(sid, text string) any {
	return map[string]any{"sessionId": sid, "prompt": []map[string]string{{"type": "text", "text": text}}}
}
