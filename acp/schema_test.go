package acp

// Every frame the agent writes in this package's tests goes through
// validateFrame (internal/acpschema): its envelope key order, the absence of
// HTML escapes and its payload against the ACP v1 JSON schema (embedded in
// internal/acpschema, a checked copy of ../shared/acp/schema.json).

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/acpschema"
)

var (
	schemaOnce sync.Once
	schemaVal  *acpschema.Validator
	schemaErr  error
)

// loadACPSchema returns the compiled schema.
func loadACPSchema(tb testing.TB) *acpschema.Validator {
	tb.Helper()
	schemaOnce.Do(func() { schemaVal, schemaErr = acpschema.Stable() })
	require.NoError(tb, schemaErr, "compile ACP schema")
	return schemaVal
}

// validateFrame checks one emitted line (see acpschema.Validator.CheckFrame).
func validateFrame(tb testing.TB, line []byte, method string) {
	tb.Helper()
	if err := loadACPSchema(tb).CheckFrame(line, method); err != nil {
		tb.Errorf("emitted frame fails the ACP contract: %v\nframe: %s", err, acpschema.ClipLine(line))
	}
}

// TestSchemaMethodMap pins the method → type mapping the validator relies on.
func TestSchemaMethodMap(t *testing.T) {
	s := loadACPSchema(t)
	for method, want := range map[string]string{
		"initialize":                "InitializeResponse",
		"authenticate":              "AuthenticateResponse",
		"session/new":               "NewSessionResponse",
		"session/load":              "LoadSessionResponse",
		"session/prompt":            "PromptResponse",
		"session/set_mode":          "SetSessionModeResponse",
		"session/set_config_option": "SetSessionConfigOptionResponse",
	} {
		require.Equal(t, want, s.TypeOf("response", method), method)
	}
	require.Equal(t, "SessionNotification", s.TypeOf("notification", "session/update"))
	require.Equal(t, "RequestPermissionRequest", s.TypeOf("request", "session/request_permission"))
	require.Equal(t, "CreateElicitationRequest", s.TypeOf("request", "elicitation/create"))
}

// TestSchemaValidatorAcceptsContractShapes feeds the wire examples of the
// contract through the validator.
func TestSchemaValidatorAcceptsContractShapes(t *testing.T) {
	s := loadACPSchema(t)
	for _, c := range []struct{ line, method string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"deepseek-harness-acp","version":"0.0.1"},"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false,"audio":false,"embeddedContext":false}},"authMethods":[]}}`, "initialize"},
		{`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"0b6c2bc4-6c7f-4c39-8e3b-0f1c7e1f2a3b"}}`, "session/new"},
		{`{"jsonrpc":"2.0","id":"x","result":{"stopReason":"end_turn"}}`, "session/prompt"},
		{`{"jsonrpc":"2.0","id":-1,"result":{}}`, "session/set_mode"},
		{`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s","modes":{"availableModes":[{"id":"default","name":"default"},{"id":"plan","name":"plan"}],"currentModeId":"default"}}}`, "session/new"},
		{`{"jsonrpc":"2.0","id":3,"result":{"configOptions":[{"id":"sandbox-mode","name":"Sandbox","description":"The file sandbox mode bash commands in this session run under.","category":"mode","type":"select","currentValue":"read-only","options":[{"value":"read-only","name":"read-only"},{"value":"workspace-write","name":"workspace-write"},{"value":"danger-full-access","name":"danger-full-access"}]},{"id":"approval-policy","name":"Approvals","description":"ask: permission prompts reach you; never: they are rejected automatically.","type":"select","currentValue":"ask","options":[{"value":"ask","name":"ask"},{"value":"never","name":"never"}]}]}}`, "session/set_config_option"},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, ""},
		{`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error: turn failed: simulated provider error (HTTP 401)"}}`, "session/prompt"},
		{`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"\"Method not found\": x/y","data":{"method":"x/y"}}}`, "x/y"},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"<b>&"}}}}`, ""},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"a","priority":"medium","status":"pending"}]}}}`, ""},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"current_mode_update","currentModeId":"plan"}}}`, ""},
		// terminal cards carry _meta inside the update (acp-bridge § 12).
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"ls","kind":"execute","status":"in_progress","rawInput":"ls","content":[{"type":"terminal","terminalId":"c1"}],"_meta":{"terminal_info":{"terminal_id":"c1","cwd":"/w"}}}}}`, ""},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","_meta":{"terminal_output":{"terminal_id":"c1","data":"x"},"terminal_exit":{"terminal_id":"c1","exit_code":0}}}}}`, ""},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c2","title":"Edit a.go","kind":"edit","status":"in_progress","locations":[{"path":"/w/a.go"}],"content":[{"type":"diff","path":"/w/a.go","oldText":null,"newText":"x"}]}}}`, ""},
		{`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c1"},"options":[{"optionId":"allow-once","name":"Allow once","kind":"allow_once"},{"optionId":"reject-once","name":"Reject","kind":"reject_once"}]}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"sessionId":"s","mode":"form","message":"Pick","requestedSchema":{"type":"object","title":"Question","properties":{"choice":{"type":"string","title":"Pick","description":"Choose one option, or fill a custom answer below.","oneOf":[{"const":"a","title":"a"}]},"custom":{"type":"string","title":"Custom answer","description":"Optional free-form answer. Leave empty to use the selected option."}},"required":[]}}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"sessionId":"s","mode":"form","message":"Why?","requestedSchema":{"type":"object","title":"Question","properties":{"custom":{"type":"string","title":"Why?"}},"required":["custom"]}}}`, ""},
	} {
		require.NoError(t, s.CheckFrame([]byte(c.line), c.method), c.line)
	}
}

// TestSchemaValidatorRejects keeps the validator honest: each frame breaks
// one rule.
func TestSchemaValidatorRejects(t *testing.T) {
	s := loadACPSchema(t)
	for _, c := range []struct{ line, method, why string }{
		{`{"id":1,"jsonrpc":"2.0","result":{}}`, "session/set_mode", "key order"},
		{`{"jsonrpc":"2.0","result":{},"id":1}`, "session/set_mode", "key order"},
		{`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"done"}}`, "session/prompt", "unknown stop reason"},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "session/new", "sessionId missing"},
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1"}}`, "initialize", "protocolVersion type"},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "", "result for no request"},
		{`{"jsonrpc":"2.0","id":{},"result":{}}`, "session/set_mode", "id type"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}`, "", "error code type"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32600}}`, "", "error message missing"},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"bogus"}}}`, "", "unknown update"},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\u003cb\u003e"}}}}`, "", "HTML escapes"},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"a","priority":"urgent","status":"pending"}]}}}`, "", "plan priority"},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","kind":"other","status":"in_progress"}}}`, "", "tool_call title missing"},
		{`{"jsonrpc":"2.0","method":"x/unknown","params":{}}`, "", "unknown notification"},
		{`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c"}}}`, "", "options missing"},
		{`{"jsonrpc":"1.0","id":1,"result":{}}`, "session/set_mode", "jsonrpc version"},
		{`[{"jsonrpc":"2.0","id":1,"result":{}}]`, "session/set_mode", "batch"},
	} {
		require.Error(t, s.CheckFrame([]byte(c.line), c.method), "%s: %s", c.why, c.line)
	}
}
