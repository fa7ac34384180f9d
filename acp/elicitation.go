package acp

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// ElicitationRequest is the params of elicitation/create (form mode).
type ElicitationRequest struct {
	SessionID       string     `json:"sessionId"`
	Mode            string     `json:"mode"`
	Message         string     `json:"message"`
	RequestedSchema formSchema `json:"requestedSchema"`
}

type formSchema struct {
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Properties formProperties `json:"properties"`
	Required   []string       `json:"required"`
}

type formProperties struct {
	Choice *choiceSchema `json:"choice,omitempty"`
	Custom *customSchema `json:"custom,omitempty"`
}

type choiceSchema struct {
	Type        string        `json:"type"`
	Title       string        `json:"title"`
	Description string        `json:"description"`
	OneOf       []choiceEntry `json:"oneOf,omitempty"`
	Items       *choiceItems  `json:"items,omitempty"`
}

type choiceItems struct {
	AnyOf []choiceEntry `json:"anyOf"`
}

type choiceEntry struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

type customSchema struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

// questionForm builds the elicitation form for one question (acp-bridge § 14).
func questionForm(sessionID string, q capabilities.Question) ElicitationRequest {
	title := q.Header
	if title == "" {
		title = "Question"
	}
	req := ElicitationRequest{SessionID: sessionID, Mode: "form", Message: q.Question,
		RequestedSchema: formSchema{Type: "object", Title: title, Required: []string{}}}
	if len(q.Options) == 0 {
		req.RequestedSchema.Properties.Custom = &customSchema{Type: "string", Title: q.Question}
		req.RequestedSchema.Required = []string{"custom"}
		return req
	}
	entries := make([]choiceEntry, len(q.Options))
	for i, o := range q.Options {
		t := o.Label
		if o.Description != "" {
			t += ": " + o.Description
		}
		entries[i] = choiceEntry{Const: o.Label, Title: t}
	}
	choice := &choiceSchema{Type: "string", Title: q.Question, Description: "Choose one option, or fill a custom answer below.", OneOf: entries}
	if q.MultiSelect {
		choice = &choiceSchema{Type: "array", Title: q.Question, Description: "Choose one or more options, or fill a custom answer below.", Items: &choiceItems{AnyOf: entries}}
	}
	req.RequestedSchema.Properties.Choice = choice
	req.RequestedSchema.Properties.Custom = &customSchema{Type: "string", Title: "Custom answer", Description: "Optional free-form answer. Leave empty to use the selected option."}
	return req
}

// Ask implements capabilities.Asker over elicitation/create, one request
// per question, in order.
func (s *Server) Ask(ctx context.Context, sessionID string, questions []capabilities.Question) ([]capabilities.Answer, error) {
	aborted := capabilities.UserInteractionError("ASK_ABORTED", "ask_user_question was aborted before the user answered")
	if ctx.Err() != nil {
		return nil, aborted
	}
	if len(questions) == 0 {
		return nil, capabilities.UserInteractionError("EMPTY_QUESTIONS", "ask_user_question requires at least one question")
	}
	s.mu.Lock()
	ls := s.sessions[sessionID]
	supported := s.elicitation
	s.mu.Unlock()
	if ls == nil {
		return nil, capabilities.UserInteractionError("NO_SESSION", "ACP user question has no matching session")
	}
	if s.opts.RequireElicitation && !supported {
		if permissionAskable(questions) {
			return s.askByPermission(ctx, sessionID, questions)
		}
		return nil, capabilities.UserInteractionError("ASK_FAILED",
			"the editor did not advertise elicitation support, so the question cannot reach the user; ask in your reply instead")
	}
	answers := make([]capabilities.Answer, 0, len(questions))
	for _, q := range questions {
		var res struct {
			Action  string `json:"action"`
			Content struct {
				Choice json.RawMessage `json:"choice"`
				Custom json.RawMessage `json:"custom"`
			} `json:"content"`
		}
		err := s.call(ctx, MethodElicitationCreate, questionForm(sessionID, q), &res)
		if ctx.Err() != nil {
			return nil, aborted
		}
		if err != nil {
			return nil, capabilities.UserInteractionError("ASK_FAILED", "ACP elicitation request failed")
		}
		if res.Action != "accept" {
			return nil, capabilities.UserInteractionError("ASK_CANCELLED", "ask_user_question was cancelled by the user")
		}
		var custom *string
		var c string
		if json.Unmarshal(res.Content.Custom, &c) == nil && strings.TrimSpace(c) != "" {
			custom = &c
		}
		selected := choices(res.Content.Choice)
		if custom == nil && len(selected) == 0 {
			return nil, capabilities.UserInteractionError("NO_ANSWER", "ask_user_question returned no answer")
		}
		a := capabilities.Answer{ID: q.ID, Selected: selected, Custom: custom}
		if custom != nil {
			a.Selected = []string{}
		}
		answers = append(answers, a)
	}
	return answers, nil
}

// choices reads the choice field: a string array's non-empty strings, a
// non-empty string, else nothing.
func choices(raw json.RawMessage) []string {
	var list []any
	if json.Unmarshal(raw, &list) == nil {
		out := []string{}
		for _, v := range list {
			if s, ok := v.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	var one string
	if json.Unmarshal(raw, &one) == nil && one != "" {
		return []string{one}
	}
	return []string{}
}

// permissionAskable reports whether questions can go out as permission
// prompts instead: each picks one of offered options on a tool call's card.
func permissionAskable(qs []capabilities.Question) bool {
	for _, q := range qs {
		if q.CallID == "" || q.MultiSelect || len(q.Options) == 0 {
			return false
		}
	}
	return true
}

// askByPermission asks choice questions through session/request_permission
// for clients without elicitation (Zed renders them as buttons on the tool
// card): the first option is offered as the allowing choice, the others as
// rejecting ones.
func (s *Server) askByPermission(ctx context.Context, sessionID string, questions []capabilities.Question) ([]capabilities.Answer, error) {
	answers := make([]capabilities.Answer, 0, len(questions))
	for _, q := range questions {
		params := RequestPermissionRequest{SessionID: sessionID, ToolCall: s.questionCall(sessionID, q)}
		for i, o := range q.Options {
			kind := RejectOnce
			if i == 0 {
				kind = AllowOnce
			}
			params.Options = append(params.Options, PermissionOption{OptionID: "choice-" + strconv.Itoa(i), Name: o.Label, Kind: kind})
		}
		out, err := s.requestPermission(ctx, params)
		switch {
		case ctx.Err() != nil:
			return nil, capabilities.UserInteractionError("ASK_ABORTED", "ask_user_question was aborted before the user answered")
		case err != nil:
			return nil, capabilities.UserInteractionError("ASK_FAILED", "ACP permission request failed")
		case out.Outcome != outcomeSelected:
			return nil, capabilities.UserInteractionError("ASK_CANCELLED", "ask_user_question was cancelled by the user")
		}
		digits, isChoice := strings.CutPrefix(out.OptionID, "choice-")
		i, err := strconv.Atoi(digits)
		if !isChoice || err != nil || i < 0 || i >= len(q.Options) {
			return nil, capabilities.UserInteractionError("NO_ANSWER", "ask_user_question returned no answer")
		}
		answers = append(answers, capabilities.Answer{ID: q.ID, Selected: []string{q.Options[i].Label}})
	}
	return answers, nil
}

// questionCall is the toolCall of a question asked as a permission
// request: the call's card, pending, with DetailedPermissions (the plan
// under review, the question); the id alone otherwise.
func (s *Server) questionCall(sessionID string, q capabilities.Question) ToolCallRef {
	ref := ToolCallRef{ToolCallID: q.CallID}
	if !s.opts.DetailedPermissions {
		return ref
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ls := s.sessions[sessionID]
	if ls == nil {
		return ref
	}
	card, ok := ls.cards[q.CallID]
	if !ok {
		return ref
	}
	content := withoutTerminals(card.Content)
	if q.Question != "" && q.Question != card.Title {
		content = append(content, textItem(q.Question))
	}
	return ToolCallRef{ToolCallID: q.CallID, Title: card.Title, Kind: card.Kind, Status: StatusPending,
		RawInput: card.RawInput, Locations: card.Locations, Content: content}
}
