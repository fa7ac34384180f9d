// Package structured is structured output for child agents
// (subagents-workflows § 3): the supported JSON-Schema subset, value
// validation with path-qualified violations, the structured_output capture
// tool, and the pipeline members that end a child's run once it captured
// (the pre-execute denial and the continuation veto).
package structured

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Schema is an output schema that passed the subset check.
type Schema struct {
	raw  json.RawMessage
	root *node
}

// Raw is the schema as given (the structured_output tool's parameters).
func (s *Schema) Raw() json.RawMessage { return s.raw }

// UnsupportedError lists why a schema is outside the subset
// (code UNSUPPORTED_SCHEMA).
type UnsupportedError struct {
	Violations []string
}

// Error implements error: "unsupported output schema: <violations>".
func (e *UnsupportedError) Error() string {
	return "unsupported output schema: " + strings.Join(e.Violations, "; ")
}

// Detail is the violations alone, joined by "; ".
func (e *UnsupportedError) Detail() string { return strings.Join(e.Violations, "; ") }

// Code is the error's code.
const CodeUnsupportedSchema = "UNSUPPORTED_SCHEMA"

var schemaTypes = map[string]bool{"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true, "null": true}

const keywordList = "type/properties/required/additionalProperties/items/enum/const + annotations"

// Parse checks raw against the supported subset (object-rooted; keywords
// type, properties, required, additionalProperties, items, enum, const;
// annotations description, title, default, examples) and returns the
// schema, or an *UnsupportedError naming every violation.
func Parse(raw json.RawMessage) (*Schema, error) {
	root, err := parse(raw)
	if err != nil {
		return nil, &UnsupportedError{Violations: []string{"schema must be a schema object"}}
	}
	var v []string
	check("schema", root, &v)
	if root.kind == kObject {
		if t, ok := root.get("type"); !ok || t.kind != kString || t.str != "object" {
			v = append(v, `schema.type must be "object" (structured output is object-rooted)`)
		}
	}
	if len(v) > 0 {
		return nil, &UnsupportedError{Violations: v}
	}
	return &Schema{raw: append(json.RawMessage(nil), raw...), root: root}, nil
}

// check appends the subset violations of the schema n at path.
func check(path string, n *node, v *[]string) {
	if n.kind != kObject {
		*v = append(*v, path+" must be a schema object")
		return
	}
	typ := ""
	if t, ok := n.get("type"); ok {
		switch {
		case t.kind != kString:
			*v = append(*v, path+".type must be a single type string (type arrays are not supported)")
		case !schemaTypes[t.str]:
			*v = append(*v, path+".type must be one of object/array/string/number/integer/boolean/null")
		default:
			typ = t.str
		}
	}
	onType := func(k string, types ...string) bool {
		if typ == "" {
			return true
		}
		for _, t := range types {
			if t == typ {
				return true
			}
		}
		*v = append(*v, fmt.Sprintf("%s.%s is not supported on type %q", path, k, typ))
		return false
	}
	props, _ := n.get("properties")
	for i, k := range n.keys {
		val := n.vals[i]
		switch k {
		case "type":
		case "description", "title":
			if val.kind != kString {
				*v = append(*v, fmt.Sprintf("%s.%s must be a string", path, k))
			}
		case "default", "examples":
			// Parsed JSON is always JSON data.
		case "properties":
			if !onType(k, "object") {
				continue
			}
			if val.kind != kObject {
				*v = append(*v, path+".properties must be an object of schemas")
				continue
			}
			for j, pk := range val.keys {
				check(path+".properties."+pk, val.vals[j], v)
			}
		case "required":
			if !onType(k, "object") {
				continue
			}
			if val.kind != kArray {
				*v = append(*v, path+".required must be an array of strings")
				continue
			}
			for _, it := range val.items {
				if it.kind != kString {
					*v = append(*v, path+".required must be an array of strings")
					break
				}
				if props == nil || props.kind != kObject {
					*v = append(*v, fmt.Sprintf("%s.required names %q which is not in properties", path, it.str))
					continue
				}
				if _, ok := props.get(it.str); !ok {
					*v = append(*v, fmt.Sprintf("%s.required names %q which is not in properties", path, it.str))
				}
			}
		case "additionalProperties":
			if !onType(k, "object") {
				continue
			}
			if val.kind != kBool {
				*v = append(*v, path+".additionalProperties must be a boolean")
			}
		case "items":
			if !onType(k, "array") {
				continue
			}
			check(path+".items", val, v)
		case "enum":
			if !onType(k, "string", "number", "integer", "boolean", "null") {
				continue
			}
			ok := val.kind == kArray && len(val.items) > 0
			if ok {
				for _, it := range val.items {
					ok = ok && it.scalar()
				}
			}
			if !ok {
				*v = append(*v, path+".enum must be a non-empty array of scalars")
			}
		case "const":
			if !onType(k, "string", "number", "integer", "boolean", "null") {
				continue
			}
			if !val.scalar() {
				*v = append(*v, path+".const must be a scalar")
			}
		default:
			*v = append(*v, fmt.Sprintf("%s.%s is not a supported keyword (subset: %s)", path, k, keywordList))
		}
	}
}

// Validate checks a value (the structured_output arguments) against the
// schema; paths are rooted at "value".
func (s *Schema) Validate(value json.RawMessage) []string {
	n, err := parse(value)
	if err != nil {
		return []string{`"value" must be an object`}
	}
	var v []string
	validate("value", s.root, n, &v)
	return v
}

var typeText = map[string]string{"string": "a string", "number": "a finite number", "integer": "an integer",
	"boolean": "a boolean", "null": "null", "array": "an array", "object": "an object"}

func validate(path string, sc, n *node, v *[]string) {
	typ := ""
	if t, ok := sc.get("type"); ok {
		typ = t.str
	}
	ok := true
	switch typ {
	case "object":
		ok = n.kind == kObject
	case "array":
		ok = n.kind == kArray
	case "string":
		ok = n.kind == kString
	case "number":
		ok = n.kind == kNumber && n.finite()
	case "integer":
		ok = n.kind == kNumber && n.finite() && n.num == math.Trunc(n.num)
	case "boolean":
		ok = n.kind == kBool
	case "null":
		ok = n.kind == kNull
	}
	if !ok {
		*v = append(*v, fmt.Sprintf("%q must be %s", path, typeText[typ]))
		return
	}
	if e, ok := sc.get("enum"); ok {
		found := false
		for _, it := range e.items {
			found = found || it.equal(n)
		}
		if !found {
			*v = append(*v, fmt.Sprintf("%q must be one of %s", path, e.json()))
		}
	}
	if c, ok := sc.get("const"); ok && !c.equal(n) {
		*v = append(*v, fmt.Sprintf("%q must be %s", path, c.json()))
	}
	switch n.kind {
	case kObject:
		props, _ := sc.get("properties")
		if req, ok := sc.get("required"); ok {
			for _, r := range req.items {
				if _, ok := n.get(r.str); !ok {
					*v = append(*v, fmt.Sprintf("missing required property %q", path+"."+r.str))
				}
			}
		}
		closed := false
		if ap, ok := sc.get("additionalProperties"); ok && ap.kind == kBool && !ap.boolean {
			closed = true
		}
		for i, k := range n.keys {
			var ps *node
			if props != nil {
				ps, _ = props.get(k)
			}
			if ps == nil {
				if closed {
					*v = append(*v, fmt.Sprintf("%q is not a declared property (additionalProperties: false)", path+"."+k))
				}
				continue
			}
			validate(path+"."+k, ps, n.vals[i], v)
		}
	case kArray:
		if it, ok := sc.get("items"); ok {
			for i, item := range n.items {
				validate(fmt.Sprintf("%s[%d]", path, i), it, item, v)
			}
		}
	}
}
