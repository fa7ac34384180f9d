// Package plan is the exit_plan_mode tool: in plan mode the model presents
// its plan, the user reviews it, and approval returns the session to the
// default mode.
package plan

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

// ToolName is the tool's name; ModeID is the session mode it leaves (the
// mode the tool is offered in).
const (
	ToolName = "exit_plan_mode"
	ModeID   = "plan"
)

// Tool is exit_plan_mode.
type Tool struct {
	// Asker reviews the plan with the user (nil: no channel).
	Asker capabilities.Asker
}

// Name implements capabilities.Tool.
func (Tool) Name() string { return ToolName }

// Traits implements capabilities.Tool: the plan review, offered in plan mode alone.
func (Tool) Traits() capabilities.Traits {
	return capabilities.Traits{Asks: true, Plans: true, Mode: ModeID}
}

// Description implements capabilities.Tool.
func (Tool) Description() string {
	return "Present your finished plan for the user's review. If they approve, plan mode ends and the full toolset " +
		"returns on your next step; if not, you get their feedback and keep planning. Only available in plan mode."
}

// Schema implements capabilities.Tool.
func (Tool) Schema() *capabilities.Schema {
	return capabilities.Object(capabilities.Req("plan", capabilities.String("The plan in Markdown, starting with a # heading that names it.")))
}

// Review is the question asked about a plan.
func Review() capabilities.Question {
	return capabilities.Question{ID: "plan-review", Header: "Plan review", Question: "Approve this plan and leave plan mode?",
		Options: []capabilities.QuestionOption{
			{Label: "Approve", Description: "Leave plan mode; the full toolset returns on the next step."},
			{Label: "Keep planning", Description: "Stay in plan mode; feedback goes back to the model."},
		}}
}

// Run implements capabilities.Tool.
func (t Tool) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	modes := capabilities.HostOf(call.Session).Modes
	if modes == nil {
		return capabilities.Result{}, errors.New("exit_plan_mode requires a calling agent (no session to switch)")
	}
	if modes.LoggedMode() != ModeID {
		return capabilities.Result{}, errors.New("exit_plan_mode is only available in plan mode")
	}
	if t.Asker == nil {
		return capabilities.Result{}, errors.New("no user-interaction channel is available to review the plan; ask the user to switch the session mode instead")
	}
	q := Review()
	q.CallID = call.CallID
	answers, err := t.Asker.Ask(ctx, call.Session.Log().ID(), []capabilities.Question{q})
	if err != nil {
		return capabilities.Result{}, err
	}
	var a capabilities.Answer
	if len(answers) > 0 {
		a = answers[0]
	}
	approved := false
	for _, s := range a.Selected {
		if s == "Approve" {
			approved = true
		}
	}
	if approved {
		call.Session.Log().Append(session.TypeModeSet, struct {
			Mode string `json:"mode"`
		}{"default"})
		text := "Plan approved — plan mode exited; the full toolset returns on your next step."
		if a.Custom != nil {
			text += " User note: " + *a.Custom
		}
		return capabilities.TextResult(text), nil
	}
	// The model reads these errors as sentences (upstream's text).
	if a.Custom != nil {
		return capabilities.Result{}, errors.New("The user chose to keep planning; their feedback: " + *a.Custom)
	}
	//lint:ignore ST1005 a sentence for the model, as recorded upstream
	return capabilities.Result{}, errors.New("The user chose to keep planning; revise the plan and present it again.")
}

var heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)

// PresentCall implements capabilities.CallPresenter.
func (Tool) PresentCall(args json.RawMessage) capabilities.CallView {
	var a struct {
		Plan string `json:"plan"`
	}
	_ = json.Unmarshal(args, &a)
	title := "Plan"
	if m := heading.FindStringSubmatch(a.Plan); m != nil {
		title = m[1]
	}
	return capabilities.CallView{Kind: capabilities.ViewGeneric, Title: title, ToolKind: capabilities.ToolKindOther, Content: []string{a.Plan}, EditorKind: capabilities.ToolKindSwitchMode}
}

// PresentResult implements capabilities.ResultPresenter.
func (Tool) PresentResult(_ json.RawMessage, r session.ToolResult) capabilities.ResultView {
	return capabilities.ResultView{Kind: capabilities.ViewGeneric, Title: "Plan review", Content: r.Content, StableTitle: true}
}
