// Package acpschema validates emitted ACP frames against the official ACP
// v1 JSON schema (embedded: see Stable): envelope key order, no HTML
// escapes, and each payload against the concrete $defs type of its method
// (the schema's unions include catch-all extension types, so the x-method
// annotations map methods to types). Tests use it on everything the agent
// writes.
package acpschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const acpSchemaURL = "file:///acp/schema.json"

// Validator is the compiled ACP schema and its method → type maps.
type Validator struct {
	mu       sync.Mutex
	c        *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema

	// request params / response result / notification params type of each
	// method, from the $defs' x-method annotations.
	reqType, respType, notifType map[string]string
}

// Compile loads and compiles the ACP schema at path.
func Compile(path string) (*Validator, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return compile(path, raw)
}

// compile compiles the schema document raw, named name in errors.
func compile(name string, raw []byte) (*Validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(acpSchemaURL, doc); err != nil {
		return nil, err
	}
	s := &Validator{c: c, compiled: map[string]*jsonschema.Schema{},
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
func (s *Validator) schema(def string) (*jsonschema.Schema, error) {
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
func (s *Validator) validate(def string, v any) error {
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

// CheckFrame checks one emitted line: its envelope key order, the absence
// of HTML escapes, and its payload against the schema. For a response,
// method names the request it answers; for notifications and agent
// requests it may be empty or must equal the frame's method.
func (s *Validator) CheckFrame(line []byte, method string) error {
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

// ClipLine shortens a frame for messages.
func ClipLine(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return string(b)
}

// TypeOf returns the $defs type the schema assigns to a method's response
// result, request params or notification params (kind "response",
// "request" or "notification"), or "".
func (s *Validator) TypeOf(kind, method string) string {
	switch kind {
	case "response":
		return s.respType[method]
	case "request":
		return s.reqType[method]
	case "notification":
		return s.notifType[method]
	}
	return ""
}
