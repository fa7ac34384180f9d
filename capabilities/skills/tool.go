package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// Tool is the skill tool: it loads one catalogued skill's instructions.
// It is also the catalogue's prompt section.
type Tool struct {
	// Catalogue is the session's skills.
	Catalogue *Catalogue
}

var (
	_ capabilities.Sectioner     = (*Tool)(nil)
	_ capabilities.CallPresenter = (*Tool)(nil)
)

// Name implements capabilities.Tool.
func (*Tool) Name() string { return "skill" }

// Traits implements capabilities.Tool: loading a skill reads one small
// file, too quick for running calls at once to gain anything.
func (*Tool) Traits() capabilities.Traits {
	return capabilities.Traits{ReadOnly: true, Sequential: true}
}

// Description implements capabilities.Tool.
func (*Tool) Description() string {
	return "Load a skill: its instructions (and where its resource files are) are returned for you to follow. " +
		"The available skills are listed in the system prompt under \"Skills\"."
}

// Schema implements capabilities.Tool.
func (*Tool) Schema() *capabilities.Schema {
	return capabilities.Object(capabilities.Req("name", capabilities.String("The skill's name, as listed")))
}

// Run implements capabilities.Tool.
func (t *Tool) Run(_ context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return capabilities.Result{}, fmt.Errorf("invalid arguments: %w", err)
	}
	s, ok := t.Catalogue.Lookup(strings.TrimSpace(a.Name))
	if !ok {
		var names []string
		for _, s := range t.Catalogue.Skills {
			names = append(names, s.Name)
		}
		msg := fmt.Sprintf("no skill named %q; available: %s", a.Name, strings.Join(names, ", "))
		if len(t.Catalogue.Skipped) > 0 {
			msg += "; skipped as malformed: " + strings.Join(t.Catalogue.Skipped, ", ")
		}
		return capabilities.Result{}, errors.New(msg)
	}
	body, err := t.Catalogue.Body(s)
	if err != nil {
		return capabilities.Result{}, fmt.Errorf("skill %q cannot be loaded: %w", s.Name, err)
	}
	return capabilities.TextResult(fmt.Sprintf("<skill name=%q>\nBase directory for this skill's files: %s\n\n%s\n</skill>", s.Name, s.Dir, body)), nil
}

// PresentCall implements capabilities.CallPresenter.
func (*Tool) PresentCall(args json.RawMessage) capabilities.CallView {
	var a struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(args, &a)
	return capabilities.CallView{Kind: capabilities.ViewGeneric, Title: "Skill " + a.Name, ToolKind: capabilities.ToolKindRead, RawInput: args}
}

// PromptSection implements capabilities.Sectioner: the catalogue, names
// and descriptions only.
func (t *Tool) PromptSection() capabilities.Section {
	sec := capabilities.Section{Name: "skills:catalogue", Order: 110}
	if t.Catalogue == nil || len(t.Catalogue.Skills) == 0 {
		return sec
	}
	var b strings.Builder
	b.WriteString("# Skills\n\nSkills are instructions for particular tasks. When a task matches a skill's description, " +
		"load it with the skill tool before you start, then follow it.\n")
	for _, s := range t.Catalogue.Skills {
		fmt.Fprintf(&b, "\n- %s: %s", s.Name, oneLine(s.Description))
	}
	sec.Text = b.String()
	return sec
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
