package capabilities

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// RawSchema is a tool parameter schema given as JSON Schema text (an MCP
// server's inputSchema, say): it is emitted as given (compacted) and the
// registry validates arguments against it before the tool runs. The schema
// must describe an object and compile; a $ref to anything outside the
// document is refused.
func RawSchema(raw json.RawMessage) (*Schema, error) {
	compact, err := jsonx.Compact(raw)
	if err != nil {
		return nil, fmt.Errorf("parameter schema: %w", err)
	}
	var head struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(compact, &head); err != nil {
		return nil, fmt.Errorf("parameter schema is not an object: %w", err)
	}
	if len(head.Type) > 0 && string(head.Type) != `"object"` {
		return nil, fmt.Errorf("parameter schema has type %s, want \"object\"", head.Type)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(compact))
	if err != nil {
		return nil, fmt.Errorf("parameter schema: %w", err)
	}
	const url = "mem:///tool-parameters.json"
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("parameter schema: %w", err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("parameter schema does not compile: %w", err)
	}
	return &Schema{Type: "object", Raw: compact, compiled: sch}, nil
}

// refusingLoader keeps a raw schema from fetching documents it refers to.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, errors.New("external schema references are not loaded: " + url)
}

// printer renders validation messages in English.
var printer = message.NewPrinter(language.English)

// validateRaw checks args against a compiled raw schema; violations name
// the argument's path the way the declared schemas' checks do.
func (s *Schema) validateRaw(args json.RawMessage) []string {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return []string{`"arguments" must be an object`}
	}
	if _, ok := inst.(map[string]any); !ok {
		return []string{`"arguments" must be an object`}
	}
	err = s.compiled.Validate(inst)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil
	}
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	leaves(ve, &out)
	if len(out) == 0 {
		out = append(out, strings.TrimSpace(ve.Error()))
	}
	return out
}

// leaves collects the innermost causes of a validation error.
func leaves(e *jsonschema.ValidationError, out *[]string) {
	if len(e.Causes) == 0 {
		at := strings.Join(e.InstanceLocation, ".")
		if at == "" {
			at = "arguments"
		}
		*out = append(*out, fmt.Sprintf("%q %s", at, e.ErrorKind.LocalizedString(printer)))
		return
	}
	for _, c := range e.Causes {
		leaves(c, out)
	}
}
