package capabilities

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// Schema is a parameter property spec; it marshals in the contract's key
// order: type, description, enum, default, properties, required, items.
type Schema struct {
	Type        string
	Description string
	Enum        []string
	Default     json.RawMessage
	Properties  []Property // object: in declaration order
	Items       *Schema    // array
	// Raw, when set, is the whole schema as given (a caller-supplied JSON
	// Schema, e.g. a structured-output schema): it is emitted verbatim and
	// the tool validates its arguments itself, unless it was built by
	// RawSchema (then the registry validates against it).
	Raw json.RawMessage

	compiled *rawValidator // RawSchema's validating form
}

// Property is one named object property.
type Property struct {
	Name     string
	Required bool
	Schema   *Schema
}

// Object builds an object schema.
func Object(props ...Property) *Schema { return &Schema{Type: "object", Properties: props} }

// Req is a required property.
func Req(name string, s *Schema) Property { return Property{Name: name, Required: true, Schema: s} }

// Opt is an optional property.
func Opt(name string, s *Schema) Property { return Property{Name: name, Schema: s} }

// String is a string schema with a description.
func String(desc string) *Schema { return &Schema{Type: "string", Description: desc} }

// Number is a number schema with a description.
func Number(desc string) *Schema { return &Schema{Type: "number", Description: desc} }

// Boolean is a boolean schema with a description.
func Boolean(desc string) *Schema { return &Schema{Type: "boolean", Description: desc} }

// Array is an array schema of items.
func Array(desc string, items *Schema) *Schema {
	return &Schema{Type: "array", Description: desc, Items: items}
}

// MarshalJSON emits the schema in contract key order.
func (s *Schema) MarshalJSON() ([]byte, error) {
	if s.Raw != nil {
		return s.Raw, nil
	}
	var b bytes.Buffer
	b.WriteString(`{"type":`)
	b.Write(jsonx.MustMarshal(s.Type))
	if s.Description != "" {
		b.WriteString(`,"description":`)
		b.Write(jsonx.MustMarshal(s.Description))
	}
	if s.Enum != nil {
		b.WriteString(`,"enum":`)
		b.Write(jsonx.MustMarshal(s.Enum))
	}
	if s.Default != nil {
		b.WriteString(`,"default":`)
		b.Write(s.Default)
	}
	if s.Type == "object" && s.Properties != nil {
		b.WriteString(`,"properties":{`)
		var req []string
		for i, p := range s.Properties {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(jsonx.MustMarshal(p.Name))
			b.WriteByte(':')
			pb, err := p.Schema.MarshalJSON()
			if err != nil {
				return nil, err
			}
			b.Write(pb)
			if p.Required {
				req = append(req, p.Name)
			}
		}
		b.WriteByte('}')
		if len(req) > 0 {
			b.WriteString(`,"required":`)
			b.Write(jsonx.MustMarshal(req))
		}
	}
	if s.Items != nil {
		b.WriteString(`,"items":`)
		ib, err := s.Items.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b.Write(ib)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Validate checks a parsed argument value against the schema and returns
// the violations (tools contract § 2): only declared properties are checked.
func (s *Schema) Validate(args json.RawMessage) []string {
	if s.Raw != nil {
		if s.compiled != nil {
			return s.validateRaw(args)
		}
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return []string{`"arguments" must be an object`}
	}
	if _, ok := v.(map[string]any); !ok {
		return []string{`"arguments" must be an object`}
	}
	var out []string
	s.check("", v, &out)
	return out
}

func (s *Schema) check(path string, v any, out *[]string) {
	article := map[string]string{"string": "a string", "number": "a number", "integer": "a number", "boolean": "a boolean", "object": "an object", "array": "an array"}
	ok := true
	switch s.Type {
	case "string":
		_, ok = v.(string)
	case "number", "integer":
		_, ok = v.(json.Number)
	case "boolean":
		_, ok = v.(bool)
	case "object":
		_, ok = v.(map[string]any)
	case "array":
		_, ok = v.([]any)
	}
	if !ok {
		*out = append(*out, fmt.Sprintf("%q must be %s", path, article[s.Type]))
		return
	}
	if s.Enum != nil {
		str, _ := v.(string)
		found := false
		for _, e := range s.Enum {
			if e == str {
				found = true
			}
		}
		if !found {
			*out = append(*out, fmt.Sprintf("%q must be one of %s", path, jsonx.MustMarshal(s.Enum)))
		}
	}
	switch val := v.(type) {
	case map[string]any:
		for _, p := range s.Properties {
			child := p.Name
			if path != "" {
				child = path + "." + p.Name
			}
			pv, present := val[p.Name]
			if !present {
				if p.Required {
					*out = append(*out, fmt.Sprintf("missing required property %q", child))
				}
				continue
			}
			p.Schema.check(child, pv, out)
		}
	case []any:
		if s.Items != nil {
			for i, item := range val {
				s.Items.check(fmt.Sprintf("%s[%d]", path, i), item, out)
			}
		}
	}
}

// Violations joins violations the way the invalid-arguments error shows them.
func Violations(v []string) string { return strings.Join(v, "; ") }
