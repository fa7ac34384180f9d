package composition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/agent"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/bash"
	"github.com/dsh-acp/dsh-acp/capabilities/mcp"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
)

// mcpConnector connects the default composition's sessions to the MCP
// servers the editor lists: each session gets its own mcp.Set, attached
// to its tool registry (so it stops with the session), whose calls go
// through the approval service and whose failures are notices in the
// session. Stdio servers run as the editor would run them (not confined),
// in the session root, with the agent's environment minus its secrets
// plus the variables the editor gave them.
type mcpConnector struct {
	approvals *approval.Service
	version   string
	log       zerolog.Logger
	env       bash.EnvPolicy // which variables reach stdio servers
}

var _ acp.MCPConnector = mcpConnector{}

// Check implements acp.MCPConnector.
func (m mcpConnector) Check(raw []json.RawMessage) error {
	_, err := parseMCP(raw)
	return err
}

// Connect implements acp.MCPConnector.
func (m mcpConnector) Connect(sess acp.Conversation, raw []json.RawMessage) {
	servers, err := parseMCP(raw)
	if err != nil || len(servers) == 0 {
		return
	}
	cfg := mcp.Config{
		Notify: func(text string) {
			sess.Log().Append(agent.TypeCommandResult, agent.CommandResult{Command: "mcp", Text: text})
		},
		Environ: m.env.Filter(os.Environ()),
		Dir:     sess.Log().Header().Cwd,
		Version: m.version,
		Log:     m.log.With().Str("session", sess.ID()).Logger(),
	}
	if m.approvals != nil {
		cfg.Approver = m.approvals
	}
	sess.Tools().Attach(mcp.Start(cfg, servers))
}

// parseMCP decodes the editor's server list; names must be unique.
func parseMCP(raw []json.RawMessage) ([]mcp.Server, error) {
	seen := map[string]bool{}
	var out []mcp.Server
	for _, r := range raw {
		s, err := mcp.Parse(r)
		if err != nil {
			return nil, err
		}
		// Tool names carry the server's name with unusual characters
		// replaced, so "a b" and "a_b" would share their tools' names.
		key := mcp.ToolName(s.Name, "")
		if seen[key] {
			return nil, fmt.Errorf("two MCP servers are named %q (or alike: their tools' names would clash)", s.Name)
		}
		seen[key] = true
		out = append(out, s)
	}
	if len(out) == 0 && len(raw) > 0 {
		return nil, errors.New("no MCP server given")
	}
	return out, nil
}

// mcpSettleTime bounds how long a prompt waits for MCP servers still
// connecting, so the model's first request can offer their tools.
const mcpSettleTime = 3 * time.Second

// mcpSettle is a prompt-submit member: it waits (bounded) for the
// session's MCP servers still connecting. Without servers it returns at
// once.
type mcpSettle struct{}

// Name implements pipeline.Namer.
func (mcpSettle) Name() string { return "mcp settle" }

// SubmitPrompt implements pipeline.PromptSubmitter.
func (mcpSettle) SubmitPrompt(ctx context.Context, s pipeline.Conversation, _ pipeline.Prompt) (pipeline.PromptDecision, error) {
	if tools := capabilities.HostOf(s).Tools; tools != nil {
		ctx, cancel := context.WithTimeout(ctx, mcpSettleTime)
		defer cancel()
		tools.Settle(ctx)
	}
	return pipeline.PromptDecision{}, nil
}
