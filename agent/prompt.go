package agent

import (
	"sort"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// Section is a system prompt section (see capabilities.Section).
type Section = capabilities.Section

// renderSystem assembles the system prompt, interpolating {{model}} and
// {{cwd}}.
func renderSystem(sections []Section, model, cwd string) string {
	s := append([]Section(nil), sections...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].Order < s[j].Order })
	r := strings.NewReplacer("{{model}}", model, "{{cwd}}", cwd)
	var parts []string
	for _, sec := range s {
		t := r.Replace(sec.Text)
		if t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// identityText introduces the harness; every composition has it.
const identityText = "You are dsh-acp, a coding agent built on DeepSeek models, working for the user inside their editor."

// IdentitySection returns the harness identity section every composition has.
func IdentitySection() Section {
	return Section{Name: "harness:identity", Order: -100, Text: identityText}
}
