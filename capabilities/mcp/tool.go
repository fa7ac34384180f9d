package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// tool is one of a server's tools as the model sees it.
type tool struct {
	c      *conn
	name   string // mcp__<server>__<tool>
	remote string // the server's name for it
	title  string
	desc   string
	schema *capabilities.Schema
}

var (
	_ capabilities.Tool          = (*tool)(nil)
	_ capabilities.CallPresenter = (*tool)(nil)
)

// newTool adapts a listed tool; its input schema becomes the parameter
// schema as given.
func newTool(c *conn, mt *sdk.Tool) (*tool, error) {
	raw, err := json.Marshal(mt.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if string(raw) == "null" {
		raw = []byte(`{"type":"object"}`)
	}
	schema, err := capabilities.RawSchema(raw)
	if err != nil {
		return nil, err
	}
	title := mt.Title
	if title == "" && mt.Annotations != nil {
		title = mt.Annotations.Title
	}
	if title == "" {
		title = mt.Name
	}
	desc := mt.Description
	if desc == "" {
		desc = title
	}
	desc += fmt.Sprintf(" (from the MCP server %q)", c.srv.Name)
	return &tool{c: c, name: ToolName(c.srv.Name, mt.Name), remote: mt.Name, title: title, desc: desc, schema: schema}, nil
}

// Name implements capabilities.Tool.
func (t *tool) Name() string { return t.name }

// Traits implements capabilities.Tool: a server's own hints (readOnlyHint) are not trusted: the tool may do anything.
func (*tool) Traits() capabilities.Traits { return capabilities.Traits{} }

// Description implements capabilities.Tool.
func (t *tool) Description() string { return t.desc }

// Schema implements capabilities.Tool.
func (t *tool) Schema() *capabilities.Schema { return t.schema }

// PresentCall implements capabilities.CallPresenter.
func (t *tool) PresentCall(args json.RawMessage) capabilities.CallView {
	return capabilities.CallView{Kind: capabilities.ViewGeneric, Title: t.title + " (MCP: " + t.c.srv.Name + ")", ToolKind: capabilities.ToolKindOther, RawInput: args}
}

// Run implements capabilities.Tool: approval on the server's first use,
// then the call.
func (t *tool) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	if err := t.c.approve(ctx, t, call); err != nil {
		return capabilities.Result{}, err
	}
	cs := t.c.session()
	if cs == nil {
		return capabilities.Result{}, &capabilities.CodedError{Name: "MCPError", Code: "MCP_UNAVAILABLE",
			Message: fmt.Sprintf("the MCP server %q is not connected", t.c.srv.Name)}
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: t.remote, Arguments: call.Args})
	if err != nil {
		if ctx.Err() != nil {
			return capabilities.Result{}, fmt.Errorf("MCP call %s cancelled: %w", t.remote, context.Cause(ctx))
		}
		if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) {
			// Without the call's "calling %q:" prefix, so that the notice
			// reads the same as when the connection's watcher sees the
			// failure first.
			why := err
			if inner := errors.Unwrap(err); inner != nil {
				why = inner
			}
			t.c.fail(why.Error(), "stopped")
		}
		return capabilities.Result{}, &capabilities.CodedError{Name: "MCPError", Code: "MCP_CALL_FAILED",
			Message: fmt.Sprintf("the MCP server %q failed the call to %s: %v", t.c.srv.Name, t.remote, err)}
	}
	blocks := convert(res)
	if res.IsError {
		var parts []string
		for _, b := range blocks {
			parts = append(parts, b.Text)
		}
		return capabilities.Result{}, &capabilities.CodedError{Name: "MCPToolError", Code: "MCP_TOOL_ERROR",
			Message: strings.Join(parts, "\n")}
	}
	return capabilities.Result{Content: blocks}, nil
}

// convert turns a call result into text blocks the model reads.
func convert(res *sdk.CallToolResult) []session.Block {
	var out []session.Block
	for _, c := range res.Content {
		switch v := c.(type) {
		case *sdk.TextContent:
			out = append(out, session.TextBlock(v.Text))
		case *sdk.ImageContent:
			out = append(out, session.TextBlock(fmt.Sprintf("[image %s, %d bytes]", v.MIMEType, len(v.Data))))
		case *sdk.AudioContent:
			out = append(out, session.TextBlock(fmt.Sprintf("[audio %s, %d bytes]", v.MIMEType, len(v.Data))))
		case *sdk.ResourceLink:
			out = append(out, session.TextBlock(fmt.Sprintf("[resource %s: %s]", v.Name, v.URI)))
		case *sdk.EmbeddedResource:
			if r := v.Resource; r != nil {
				if r.Text != "" {
					out = append(out, session.TextBlock(r.Text))
				} else {
					out = append(out, session.TextBlock(fmt.Sprintf("[resource %s, %s, %d bytes base64]", r.URI, r.MIMEType, base64.StdEncoding.EncodedLen(len(r.Blob)))))
				}
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				out = append(out, session.TextBlock(string(b)))
			}
		}
	}
	if len(out) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			out = append(out, session.TextBlock(string(b)))
		}
	}
	return out
}

// approve asks the user before the server's first use; "always" is
// remembered for the session, "once" lets this call go ahead.
func (c *conn) approve(ctx context.Context, t *tool, call *capabilities.Call) error {
	ap := c.set.cfg.Approver
	if ap == nil {
		return nil
	}
	c.askMu.Lock()
	defer c.askMu.Unlock()
	if c.always {
		return nil
	}
	refuse := func(why string) error {
		return &capabilities.CodedError{Name: "MCPError", Code: "MCP_NOT_APPROVED",
			Message: fmt.Sprintf("calling %s on the MCP server %q was not allowed: %s", t.remote, c.srv.Name, why)}
	}
	if call == nil || call.Session == nil || call.Session.Log() == nil {
		return refuse("the call has no session to ask through")
	}
	out, err := ap.Request(ctx, call.Session.Log(), approval.Request{ToolName: t.name, CallID: call.CallID,
		Reason: fmt.Sprintf("use the MCP server %q (tool %s)", c.srv.Name, t.remote)})
	if err != nil {
		return refuse("approval failed: " + err.Error())
	}
	switch out {
	case approval.AllowedAlways:
		c.always = true
		return nil
	case approval.AllowedOnce:
		return nil
	case approval.Rejected:
		return refuse("approval was refused (by the user, or by the approval policy \"never\")")
	case approval.Cancelled:
		return refuse("the approval request was cancelled")
	}
	return refuse("no approval channel is available")
}
