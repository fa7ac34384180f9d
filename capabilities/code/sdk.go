package code

import (
	"context"
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// Hidden registers a tool without offering it to the model: in code mode
// the native tools are reached only from run_code programs. Its prompt
// section and resources stay the tool's.
type Hidden struct{ capabilities.Tool }

// OffWire implements capabilities.OffWirer.
func (Hidden) OffWire() bool { return true }

// PromptSection implements capabilities.Sectioner (the inner tool's, or
// an empty section, which is dropped).
func (h Hidden) PromptSection() capabilities.Section {
	if s, ok := h.Tool.(capabilities.Sectioner); ok {
		return s.PromptSection()
	}
	return capabilities.Section{}
}

// Close implements capabilities.Closer.
func (h Hidden) Close(ctx context.Context) error {
	if c, ok := h.Tool.(capabilities.Closer); ok {
		return c.Close(ctx)
	}
	return nil
}

const sdkIntro = "In `run_code` programs the session's tools are an async SDK: `await tools.<name>(args)` runs the tool " +
	"exactly as a direct call would (same checks, approvals and effects) and resolves to its text result, or throws an " +
	"Error carrying that text when the tool fails. Calls run one at a time. Use `console.log` for intermediate output " +
	"and `return` the value you want to see."

var identRe = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// SDK renders the tools:sdk section: the instruction paragraph, then the
// TypeScript declaration of every tool but run_code, sorted by name.
func SDK(tools []capabilities.Tool) string {
	sorted := append([]capabilities.Tool(nil), tools...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name() < sorted[j].Name() })
	var b strings.Builder
	b.WriteString(sdkIntro)
	b.WriteString("\n\n```ts\ndeclare const tools: {\n")
	for _, t := range sorted {
		if t.Name() == Name {
			continue
		}
		doc(&b, "  ", t.Description())
		b.WriteString("  " + key(t.Name()) + "(args: " + tsType(t.Schema(), "  ") + "): Promise<string>;\n")
	}
	b.WriteString("};\n```")
	return b.String()
}

// doc writes a one-line doc comment (whitespace collapsed, "*/" escaped).
func doc(b *strings.Builder, indent, text string) {
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return
	}
	b.WriteString(indent + "/** " + strings.ReplaceAll(text, "*/", "*\\/") + " */\n")
}

// key is a property name, JSON-quoted unless an identifier.
func key(name string) string {
	if identRe.MatchString(name) {
		return name
	}
	q, _ := json.Marshal(name)
	return string(q)
}

// tsType renders a parameter schema as a TypeScript type; nested object
// lines are indented one level below indent.
func tsType(s *capabilities.Schema, indent string) string {
	if s == nil {
		return "unknown"
	}
	if s.Raw != nil {
		return "Record<string, unknown>"
	}
	switch s.Type {
	case "string":
		if len(s.Enum) > 0 {
			parts := make([]string, len(s.Enum))
			for i, e := range s.Enum {
				q, _ := json.Marshal(e)
				parts[i] = string(q)
			}
			return strings.Join(parts, " | ")
		}
		return "string"
	case "number", "integer":
		return "number"
	case "boolean":
		return "boolean"
	case "array":
		el := tsType(s.Items, indent)
		if strings.Contains(el, "|") && !strings.HasPrefix(el, "{") {
			el = "(" + el + ")"
		}
		return el + "[]"
	case "object":
		if len(s.Properties) == 0 {
			return "Record<string, unknown>"
		}
		var b strings.Builder
		b.WriteString("{\n")
		inner := indent + "  "
		for _, p := range s.Properties {
			doc(&b, inner, p.Schema.Description)
			opt := "?"
			if p.Required {
				opt = ""
			}
			b.WriteString(inner + key(p.Name) + opt + ": " + tsType(p.Schema, inner) + ";\n")
		}
		b.WriteString(indent + "}")
		return b.String()
	}
	return "unknown"
}
