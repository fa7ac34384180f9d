package acp

// Every frame the agent writes in this package's tests goes through
// checkFrame: its envelope key order, the absence of HTML escapes and its
// payload against the ACP v1 JSON schema of ../shared/acp/schema.json
// (protocol version 1, SDK 2.4.0). The schema's message unions are anyOf
// lists that include the catch-all ExtResponse / ExtNotification ({}), so
// payloads are validated against the concrete $defs type of their method
// (the x-method annotation of the schema maps methods to types).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// acpSchemaPath is the shared ACP schema, relative to this package.
var acpSchemaPath = filepath.Join("..", "..", "shared", "acp", "schema.json")

const acpSchemaURL = "file:///acp/schema.json"

// acpSchema is the compiled ACP schema and its method → type maps.
type acpSchema struct {
	mu       sync.Mutex
	c        *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema

	// request params / response result / notification params type of each
	// method, from the $defs' x-method annotations.
	reqType, respType, notifType map[string]string
}

var (
	schemaOnce sync.Once
	schemaVal  *acpSchema
	schemaErr  error
)

// loadACPSchema returns the compiled schema; it skips the test when the
// shared schema is absent.
func loadACPSchema(tb testing.TB) *acpSchema {
	tb.Helper()
	schemaOnce.Do(func() { schemaVal, schemaErr = compileACPSchema(acpSchemaPath) })
	if errors.Is(schemaErr, os.ErrNotExist) {
		tb.Skipf("ACP schema not found at %s (the shared ACP schema is needed to validate emitted frames): %v", acpSchemaPath, schemaErr)
	}
	require.NoError(tb, schemaErr, "compile ACP schema")
	return schemaVal
}

func compileACPSchema(path string) (*acpSchema, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(acpSchemaURL, doc); err != nil {
		return nil, err
	}
	s := &acpSchema{c: c, compiled: map[string]*jsonschema.Schema{},
		reqType: map[string]string{}, respType: map[string]string{}, notifType: map[string]string{}}
	var plain struct {
		Defs map[string]struct {
			Method string `json:"x-method"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &plain); err != nil {
		return nil, err
	}
	for name, d := range plain.Defs {
		switch {
		case d.Method == "":
		case strings.HasSuffix(name, "Response"):
			s.respType[d.Method] = name
		case strings.HasSuffix(name, "Request"):
			s.reqType[d.Method] = name
		case strings.HasSuffix(name, "Notification"):
			s.notifType[d.Method] = name
		}
	}
	// The root (anyOf Agent/Client/ProtocolLevel envelopes) must compile too.
	if _, err := s.schema(""); err != nil {
		return nil, err
	}
	return s, nil
}

// schema returns the compiled $defs type name ("" = the root schema).
func (s *acpSchema) schema(def string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.compiled[def]; ok {
		return sch, nil
	}
	loc := acpSchemaURL
	if def != "" {
		loc += "#/$defs/" + def
	}
	sch, err := s.c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", loc, err)
	}
	s.compiled[def] = sch
	return sch, nil
}

// validate checks v against the named $defs type.
func (s *acpSchema) validate(def string, v any) error {
	sch, err := s.schema(def)
	if err != nil {
		return err
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("not a valid %s: %w", nonEmpty(def, "ACP message"), err)
	}
	return nil
}

func nonEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// validateFrame checks one emitted line: for a response, method names the
// request it answers; for notifications and agent requests it may be empty
// (the frame's own method is used) or must equal the frame's method.
func validateFrame(tb testing.TB, line []byte, method string) {
	tb.Helper()
	if err := loadACPSchema(tb).checkFrame(line, method); err != nil {
		tb.Errorf("emitted frame fails the ACP contract: %v\nframe: %s", err, clipLine(line))
	}
}

// frameKeyOrders are the only envelopes the agent may write (acp-bridge § 1).
var frameKeyOrders = map[string]string{
	"jsonrpc,id,result":        "response",
	"jsonrpc,id,error":         "error",
	"jsonrpc,method,params":    "notification",
	"jsonrpc,id,method,params": "request",
}

// htmlEscapes must never appear in emitted frames (acp-bridge § 1; the
// project writes `<`, `>`, `&` and U+2028/U+2029 literally, as JS does).
var htmlEscapes = []string{`\u003c`, `\u003e`, `\u0026`, `\u2028`, `\u2029`}

// checkFrame is validateFrame's error-returning core.
func (s *acpSchema) checkFrame(line []byte, method string) error {
	if bytes.ContainsAny(line, "\n\r") {
		return errors.New("frame contains a raw line break")
	}
	if !json.Valid(line) {
		return errors.New("frame is not valid JSON")
	}
	keys, err := topLevelKeys(line)
	if err != nil {
		return err
	}
	kind, ok := frameKeyOrders[strings.Join(keys, ",")]
	if !ok {
		return fmt.Errorf("envelope keys %v are not one of jsonrpc,id,result | jsonrpc,id,error | jsonrpc,method,params | jsonrpc,id,method,params", keys)
	}
	for _, e := range htmlEscapes {
		if bytes.Contains(line, []byte(e)) {
			return fmt.Errorf("frame contains the escape %s (must be literal)", e)
		}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return err
	}
	m := v.(map[string]any)
	if m["jsonrpc"] != "2.0" {
		return fmt.Errorf("jsonrpc is %v, want \"2.0\"", m["jsonrpc"])
	}
	if err := s.validate("", v); err != nil {
		return err
	}
	if kind != "notification" {
		if err := s.validate("RequestId", m["id"]); err != nil {
			return fmt.Errorf("id: %w", err)
		}
	}
	switch kind {
	case "response":
		if method == "" {
			return errors.New("a result answers no request this test sent")
		}
		def, ok := s.respType[method]
		if !ok {
			return fmt.Errorf("method %q has no response type in the schema, yet a result was sent", method)
		}
		return s.validate(def, m["result"])
	case "error":
		return s.validate("Error", m["error"])
	case "notification", "request":
		fm, _ := m["method"].(string)
		if method != "" && method != fm {
			return fmt.Errorf("frame method %q, want %q", fm, method)
		}
		types := s.notifType
		if kind == "request" {
			types = s.reqType
		}
		def, ok := types[fm]
		if !ok {
			return fmt.Errorf("%s method %q is not in the schema", kind, fm)
		}
		return s.validate(def, m["params"])
	}
	return nil
}

// topLevelKeys returns the keys of a JSON object in document order.
func topLevelKeys(line []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("frame is not a JSON object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func clipLine(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return string(b)
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
		require.Equal(t, want, s.respType[method], method)
	}
	require.Equal(t, "SessionNotification", s.notifType["session/update"])
	require.Equal(t, "RequestPermissionRequest", s.reqType["session/request_permission"])
	require.Equal(t, "CreateElicitationRequest", s.reqType["elicitation/create"])
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
		require.NoError(t, s.checkFrame([]byte(c.line), c.method), c.line)
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
		require.Error(t, s.checkFrame([]byte(c.line), c.method), "%s: %s", c.why, c.line)
	}
}
