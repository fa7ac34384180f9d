package acp

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-acp/dsh-acp/approval"
)

// What "always" is said to cover comes from the request's scope, never
// from its reason text: a reason that merely mentions a read-only sandbox
// or a folder is an ordinary request.
func TestAlwaysNamesTheRequestsScope(t *testing.T) {
	cases := []struct {
		req         approval.Request
		always      string
		projectName string
	}{
		{approval.Request{ToolName: "bash", Reason: "escalate sandbox to danger-full-access: needs the network", Scope: approval.ScopeSandbox, Subject: "danger-full-access", Detail: "needs the network", Action: "make"},
			"Always allow, and keep this session at Full access", "Always allow `make` with Full access in this project"},
		{approval.Request{ToolName: "write", Reason: `write "/w/a": the sandbox is read-only`, Scope: approval.ScopeWrites},
			"Always allow writes in this session (switches the sandbox to Workspace)", "Always allow writes in this project"},
		{approval.Request{ToolName: "write", Reason: `write "/x/a": it is outside the session root /w`, Scope: approval.ScopeFolder, Subject: "/x"},
			"Always allow changes in this folder in this session", ""},
		{approval.Request{ToolName: "web_fetch", Reason: "fetch https://example.org/", Scope: approval.ScopeHost, Subject: "example.org"},
			"Always allow example.org in this session", ""},
		{approval.Request{ToolName: "mcp__notes__add", Reason: "escalate sandbox to danger-full-access: the sandbox is read-only, outside the session root"},
			"Always allow in this session", ""},
	}
	for _, c := range cases {
		assert.Equal(t, c.always, alwaysName(c.req), c.req.Reason)
		_, name := projectScope(c.req)
		assert.Equal(t, c.projectName, name, c.req.Reason)
	}
	// The grant is keyed on the command itself; an escalation that does
	// not name its command (whatever its card is titled) offers none.
	scope, _ := projectScope(cases[0].req)
	assert.Equal(t, "run:danger-full-access:make", scope)
	untitled := cases[0].req
	untitled.Action = ""
	scope, name := projectScope(untitled)
	assert.Empty(t, scope+name)
	mode, why, ok := escalation(cases[0].req)
	assert.True(t, ok)
	assert.Equal(t, "danger-full-access", mode)
	assert.Equal(t, "needs the network", why)
}

// A network request names the command whatever path it came by (with no
// card, as from run_code, the title does too), says "with network
// access", and offers no project-wide grant.
func TestNetworkRequestNamesTheCommand(t *testing.T) {
	req := approval.Request{ToolName: "bash", CallID: "c", Reason: "run `curl x` with network access: uploads", Scope: approval.ScopeNetwork,
		Subject: "curl https://example.org/upload", Detail: "uploads"}
	assert.Contains(t, askText(req), "with network access")
	assert.Contains(t, askText(req), "curl https://example.org/upload")
	assert.Contains(t, askText(req), "Why: uploads")
	assert.Equal(t, "Run `curl https://example.org/upload` with network access?", askTitle(req))
	assert.Equal(t, "Always allow in this session", alwaysName(req))
	scope, _ := projectScope(req)
	assert.Empty(t, scope)
}
