package capabilities

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// The validator is google/jsonschema-go, the one the MCP SDK already links
// for its own schemas. It replaced santhosh-tekuri/jsonschema, whose package
// initializer compiles every draft's metaschema at process start (3.3 ms and
// 1.7 MB of heap in each dsh-acp process, whether or not an MCP server is
// ever configured); this one costs ~0.1 ms at init and compiles a schema
// only when RawSchema is called.

// RawSchema is a tool parameter schema given as JSON Schema text (an MCP
// server's inputSchema, say): it is emitted as given (compacted) and the
// registry validates arguments against it before the tool runs. The schema
// must describe an object and resolve; a $ref to anything outside the
// document is refused. Draft 2020-12 and draft-07 are validated as such;
// a schema declaring another draft in "$schema" is validated as 2020-12.
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
	var doc jsonschema.Schema
	if err := json.Unmarshal(compact, &doc); err != nil {
		return nil, fmt.Errorf("parameter schema: %w", err)
	}
	if !validatedDraft(doc.Schema) {
		doc.Schema = ""
	}
	res, err := doc.Resolve(&jsonschema.ResolveOptions{
		BaseURI: "mem:///tool-parameters.json",
		Loader: func(u *url.URL) (*jsonschema.Schema, error) {
			return nil, errors.New("external schema references are not loaded: " + u.String())
		},
	})
	if err != nil {
		return nil, fmt.Errorf("parameter schema does not resolve: %w", err)
	}
	return &Schema{Type: "object", Raw: compact, compiled: &rawValidator{resolved: res, required: doc.Required}}, nil
}

// rawValidator is a raw schema's validating form.
type rawValidator struct {
	resolved *jsonschema.Resolved
	required []string // the root's required properties
}

// validatedDraft reports whether the validator knows the draft a "$schema"
// names ("" is the latest).
func validatedDraft(s string) bool {
	switch s {
	case "", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2020-12/schema":
		return true
	}
	return false
}

// validateRaw checks args against a resolved raw schema. The validator
// stops at its first violation; missing required arguments are reported
// besides it, so a model that forgot one and mistyped another learns both.
// Violations name the argument's path the way the declared schemas' checks
// do.
func (s *Schema) validateRaw(args json.RawMessage) []string {
	var inst any
	if err := json.Unmarshal(args, &inst); err != nil {
		return []string{`"arguments" must be an object`}
	}
	obj, ok := inst.(map[string]any)
	if !ok {
		return []string{`"arguments" must be an object`}
	}
	var out []string
	var absent []string
	for _, name := range s.compiled.required {
		if _, ok := obj[name]; !ok {
			absent = append(absent, strconv.Quote(name))
		}
	}
	if len(absent) > 0 {
		out = append(out, `"arguments" `+missing("["+strings.Join(absent, " ")+"]"))
	}
	if err := s.compiled.resolved.Validate(inst); err != nil {
		if v := violation(err.Error()); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// violation rewrites the validator's error, a chain of "validating
// SCHEMA-PATH: " prefixes and a message, as `"ARG-PATH" message`. The
// argument path is the chain of property names in the innermost schema path
// ("arguments" for the root).
func violation(msg string) string {
	at := "arguments"
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		path, tail, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		if p := propertyPath(path); p != "" {
			at = p
		}
		msg = tail
	}
	return fmt.Sprintf("%q %s", at, message(msg))
}

// propertyPath keeps the property names of a schema path
// ("/properties/a/items/properties/b" is "a.b").
func propertyPath(schemaPath string) string {
	var names []string
	segs := strings.Split(schemaPath, "/")
	for i := 0; i+1 < len(segs); i++ {
		if segs[i] == "properties" {
			names = append(names, strings.ReplaceAll(strings.ReplaceAll(segs[i+1], "~1", "/"), "~0", "~"))
			i++
		}
	}
	return strings.Join(names, ".")
}

// message shortens the validator's commonest messages to the form the
// declared schemas' checks use; others pass unchanged.
func message(m string) string {
	switch {
	case strings.HasPrefix(m, "required: missing properties: "):
		return missing(strings.TrimPrefix(m, "required: missing properties: "))
	case strings.HasPrefix(m, "unexpected additional properties "):
		// The validator lists them in map order: sorted, the message is
		// the same on every run.
		names := quotedList(strings.TrimPrefix(m, "unexpected additional properties "))
		slices.Sort(names)
		return "additional properties " + strings.Join(names, ", ") + " not allowed"
	case strings.HasPrefix(m, "type: "):
		// type: VALUE has type "GOT", want "WANT" | want one of ["A" "B"]
		i := strings.LastIndex(m, " has type ")
		if i < 0 {
			return m
		}
		got, want, ok := strings.Cut(m[i+len(" has type "):], ", want ")
		if !ok {
			return m
		}
		got = unquote(got)
		if got == "integer" {
			got = "number"
		}
		if rest, ok := strings.CutPrefix(want, "one of "); ok {
			return "got " + got + ", want one of " + strings.Join(bare(quotedList(rest)), ", ")
		}
		return "got " + got + ", want " + unquote(want)
	}
	for _, k := range [...]struct{ key, rel string }{
		{"maximum", " is greater than "}, {"minimum", " is less than "},
		{"exclusiveMaximum", " is greater than or equal to "}, {"exclusiveMinimum", " is less than or equal to "},
	} {
		if rest, ok := strings.CutPrefix(m, k.key+": "); ok {
			if got, want, ok := strings.Cut(rest, k.rel); ok {
				return k.key + ": got " + number(got) + ", want " + number(want)
			}
		}
	}
	return m
}

// number prints the validator's rational ("9/1") or fixed-point
// ("3.000000") numbers the way JSON writes them.
func number(s string) string {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return s
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// missing is "missing property 'a'" or "missing properties 'a', 'b'".
func missing(list string) string {
	names := quotedList(list)
	if len(names) == 1 {
		return "missing property " + names[0]
	}
	return "missing properties " + strings.Join(names, ", ")
}

// quotedList turns the validator's `["a" "b"]` into `'a'`, `'b'`.
func quotedList(s string) []string {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	var out []string
	for s != "" {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return append(out, s)
		}
		out = append(out, "'"+unquote(q)+"'")
		s = strings.TrimSpace(s[len(q):])
	}
	return out
}

// bare strips the single quotes quotedList adds.
func bare(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.Trim(n, "'")
	}
	return out
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}
