// Package ask is the ask_user_question tool: the model puts one or more
// questions to the user, who answers in the editor (over ACP elicitation).
package ask

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// Tool is ask_user_question.
type Tool struct {
	// Asker reaches the user (nil: no channel).
	Asker capabilities.Asker
}

// Name implements capabilities.Tool.
func (Tool) Name() string { return "ask_user_question" }

// Traits implements capabilities.Tool.
func (Tool) Traits() capabilities.Traits { return capabilities.Traits{Asks: true} }

// Description implements capabilities.Tool.
func (Tool) Description() string {
	return "Ask the user one or more questions and wait for their answers. Offer options when the choice is between " +
		"known alternatives (the user may still type a custom answer); leave options out for an open question. Use it " +
		"when you cannot proceed sensibly without a decision only the user can make."
}

// Schema implements capabilities.Tool.
func (Tool) Schema() *capabilities.Schema {
	option := capabilities.Object(
		capabilities.Req("label", capabilities.String("The answer as the user picks it.")),
		capabilities.Opt("description", capabilities.String("What choosing it means.")),
	)
	question := capabilities.Object(
		capabilities.Req("id", capabilities.String("Your id for the question; the answer carries it.")),
		capabilities.Req("question", capabilities.String("The question, as one clear sentence.")),
		capabilities.Opt("header", capabilities.String("A short title for the question form.")),
		capabilities.Opt("options", capabilities.Array("Answers to choose from.", option)),
		capabilities.Opt("multi_select", capabilities.Boolean("Allow choosing several options.")),
	)
	return capabilities.Object(capabilities.Req("questions", capabilities.Array("The questions, asked in order.", question)))
}

// PresentCall implements capabilities.CallPresenter: upstream's card
// (titled by the tool, its arguments as rawInput), titled by the question
// in editors.
func (Tool) PresentCall(args json.RawMessage) capabilities.CallView {
	var a struct {
		Questions []struct {
			Question string `json:"question"`
			Header   string `json:"header"`
		} `json:"questions"`
	}
	_ = json.Unmarshal(args, &a)
	v := capabilities.CallView{Kind: capabilities.ViewGeneric, Title: "ask_user_question", ToolKind: capabilities.ToolKindOther, RawInput: args}
	switch {
	case len(a.Questions) == 1:
		v.EditorTitle = a.Questions[0].Question
	case len(a.Questions) > 1:
		v.EditorTitle = a.Questions[0].Question + " (and " + strconv.Itoa(len(a.Questions)-1) + " more)"
	}
	if len(a.Questions) > 0 && a.Questions[0].Header != "" {
		v.EditorTitle = a.Questions[0].Header + ": " + v.EditorTitle
	}
	return v
}

// Run implements capabilities.Tool.
func (t Tool) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var a struct {
		Questions []struct {
			ID       string `json:"id"`
			Question string `json:"question"`
			Header   string `json:"header"`
			Options  []struct {
				Label       string `json:"label"`
				Description string `json:"description"`
			} `json:"options"`
			MultiSelect bool `json:"multi_select"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return capabilities.Result{}, err
	}
	if t.Asker == nil {
		return capabilities.Result{}, capabilities.UserInteractionError("NO_PROVIDER", "no user-interaction provider is registered")
	}
	qs := make([]capabilities.Question, 0, len(a.Questions))
	for _, q := range a.Questions {
		cq := capabilities.Question{ID: q.ID, Question: q.Question, Header: q.Header, MultiSelect: q.MultiSelect, CallID: call.CallID}
		for _, o := range q.Options {
			cq.Options = append(cq.Options, capabilities.QuestionOption{Label: o.Label, Description: o.Description})
		}
		qs = append(qs, cq)
	}
	sessionID := ""
	if call.Session != nil && call.Session.Log() != nil {
		sessionID = call.Session.Log().ID()
	}
	answers, err := t.Asker.Ask(ctx, sessionID, qs)
	if err != nil {
		return capabilities.Result{}, err
	}
	return capabilities.TextResult(string(jsonx.MustMarshal(struct {
		Answers []capabilities.Answer `json:"answers"`
	}{answers}))), nil
}
