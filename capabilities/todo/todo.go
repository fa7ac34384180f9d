// Package todo is the todo_write tool: the model's task list, recorded as a
// todo/write event and shown to the client as a plan.
package todo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// Tool is todo_write.
type Tool struct{}

// Name implements capabilities.Tool.
func (Tool) Name() string { return "todo_write" }

// Traits implements capabilities.Tool: the task list is the session's, not the workspace's; it is still a change, so calls do not run at once.
func (Tool) Traits() capabilities.Traits { return capabilities.Traits{Plans: true} }

// Description implements capabilities.Tool.
func (Tool) Description() string {
	return "Replace the session's task list. Send the whole list every time: each task has content and a status " +
		"(pending, in_progress or completed); keep at most one task in_progress. Use it for work with several steps " +
		"so the user can follow your progress."
}

// Schema implements capabilities.Tool.
func (Tool) Schema() *capabilities.Schema {
	return capabilities.Object(
		capabilities.Req("todos", capabilities.Array("The complete task list, in order.", capabilities.Object(
			capabilities.Req("content", capabilities.String("What the task is, in a short imperative sentence.")),
			capabilities.Req("status", &capabilities.Schema{Type: "string", Description: "The task's state.", Enum: []string{"pending", "in_progress", "completed"}}),
		))),
	)
}

// Run implements capabilities.Tool.
func (Tool) Run(_ context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var args struct {
		Todos []session.Todo `json:"todos"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return capabilities.Result{}, err
	}
	seen := map[string]bool{}
	inProgress := 0
	todos := make([]session.Todo, 0, len(args.Todos))
	var pending, completed int
	for _, t := range args.Todos {
		c := strings.TrimSpace(t.Content)
		if c == "" {
			return capabilities.Result{}, errors.New("invalid todo: `content` must be a non-empty string")
		}
		if seen[c] {
			return capabilities.Result{}, fmt.Errorf("invalid todos: duplicate content %s", jsonx.MustMarshal(c))
		}
		seen[c] = true
		switch t.Status {
		case "in_progress":
			inProgress++
		case "pending":
			pending++
		case "completed":
			completed++
		}
		todos = append(todos, session.Todo{Content: c, Status: t.Status})
	}
	if inProgress > 1 {
		return capabilities.Result{}, fmt.Errorf("invalid todos: at most one task may be in_progress, got %d", inProgress)
	}
	if call.Session == nil || call.Session.Log() == nil {
		return capabilities.Result{}, errors.New("todo_write requires an owning agent session")
	}
	call.Session.Log().Append(session.TypeTodoWrite, session.TodoWrite{Todos: todos})
	return capabilities.TextResult(fmt.Sprintf("Updated todo list: %d pending, %d in progress, %d completed.", pending, inProgress, completed)), nil
}

// PresentCall implements capabilities.CallPresenter.
func (Tool) PresentCall(args json.RawMessage) capabilities.CallView {
	var a struct {
		Todos json.RawMessage `json:"todos"`
	}
	_ = json.Unmarshal(args, &a)
	return capabilities.CallView{Kind: capabilities.ViewGeneric, Title: "Update todo list", ToolKind: capabilities.ToolKindOther, RawInput: a.Todos, Hidden: true}
}
