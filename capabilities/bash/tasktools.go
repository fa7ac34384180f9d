package bash

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// TaskTools returns the tools over a task registry: task_output, task_list,
// task_kill. Every producer's tasks are reached through them.
func TaskTools(tasks *Tasks) []capabilities.Tool {
	return []capabilities.Tool{TaskOutputTool{tasks}, TaskListTool{tasks}, TaskKillTool{tasks}}
}

type taskIDArgs struct {
	TaskID string `json:"task_id"`
}

func parseTaskID(raw json.RawMessage) (string, error) {
	var a taskIDArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %w", err)
	}
	return a.TaskID, nil
}

func taskIDSchema(desc string) *capabilities.Schema {
	return capabilities.Object(capabilities.Req("task_id", capabilities.String(desc)))
}

// taskCard is the generic call card of the id-taking task tools.
func taskCard(args json.RawMessage, title string) capabilities.CallView {
	var a taskIDArgs
	_ = json.Unmarshal(args, &a)
	return capabilities.CallView{Kind: capabilities.ViewGeneric, Title: title + a.TaskID, ToolKind: capabilities.ToolKindExecute, RawInput: rawString(a.TaskID)}
}

// TaskOutputTool is task_output: a task's new output and status.
type TaskOutputTool struct{ tasks *Tasks }

// Name implements capabilities.Tool.
func (TaskOutputTool) Name() string { return "task_output" }

// Traits implements capabilities.Tool: a tool of the commands bash runs (plan mode runs none).
func (TaskOutputTool) Traits() capabilities.Traits { return capabilities.Traits{Runs: true} }

// Description implements capabilities.Tool.
func (TaskOutputTool) Description() string {
	return "Show what a background task has printed since you last looked, followed by a [status: …] line telling " +
		"whether it is still running, how it exited, or that it was killed. It does not wait for the task."
}

// Schema implements capabilities.Tool.
func (TaskOutputTool) Schema() *capabilities.Schema {
	return taskIDSchema("The id of the task, as returned when it started (for example bash-1).")
}

// Run implements capabilities.Tool.
func (t TaskOutputTool) Run(_ context.Context, call *capabilities.Call) (capabilities.Result, error) {
	id, err := parseTaskID(call.Args)
	if err != nil {
		return capabilities.Result{}, err
	}
	text, err := t.tasks.Output(owner(call), id)
	if err != nil {
		return capabilities.Result{}, err
	}
	return capabilities.TextResult(text), nil
}

// PresentCall implements capabilities.CallPresenter.
func (TaskOutputTool) PresentCall(args json.RawMessage) capabilities.CallView {
	return taskCard(args, "Read output from background task ")
}

// TaskListTool is task_list: the session's background tasks.
type TaskListTool struct{ tasks *Tasks }

// Name implements capabilities.Tool.
func (TaskListTool) Name() string { return "task_list" }

// Traits implements capabilities.Tool: a tool of the commands bash runs (plan mode runs none).
func (TaskListTool) Traits() capabilities.Traits { return capabilities.Traits{Runs: true} }

// Description implements capabilities.Tool.
func (TaskListTool) Description() string {
	return "List the background tasks this session started, one per line with its id, what it runs and its status."
}

// Schema implements capabilities.Tool.
func (TaskListTool) Schema() *capabilities.Schema {
	return &capabilities.Schema{Type: "object", Properties: []capabilities.Property{}} // "properties":{}
}

// Run implements capabilities.Tool.
func (t TaskListTool) Run(_ context.Context, call *capabilities.Call) (capabilities.Result, error) {
	return capabilities.TextResult(t.tasks.ListText(owner(call))), nil
}

// PresentCall implements capabilities.CallPresenter.
func (TaskListTool) PresentCall(args json.RawMessage) capabilities.CallView {
	return capabilities.CallView{Kind: capabilities.ViewGeneric, Title: "List background tasks", ToolKind: capabilities.ToolKindExecute, RawInput: args}
}

// TaskKillTool is task_kill: stop a background task.
type TaskKillTool struct{ tasks *Tasks }

// Name implements capabilities.Tool.
func (TaskKillTool) Name() string { return "task_kill" }

// Traits implements capabilities.Tool: a tool of the commands bash runs (plan mode runs none).
func (TaskKillTool) Traits() capabilities.Traits { return capabilities.Traits{Runs: true} }

// Description implements capabilities.Tool.
func (TaskKillTool) Description() string {
	return "Stop a background task that is still running (its whole process group gets SIGTERM, then SIGKILL if it " +
		"lingers). Output it printed stays readable with task_output."
}

// Schema implements capabilities.Tool.
func (TaskKillTool) Schema() *capabilities.Schema {
	return taskIDSchema("The id of the task to stop (for example bash-1).")
}

// Run implements capabilities.Tool.
func (t TaskKillTool) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	id, err := parseTaskID(call.Args)
	if err != nil {
		return capabilities.Result{}, err
	}
	text, err := t.tasks.Kill(ctx, owner(call), id)
	if err != nil {
		return capabilities.Result{}, err
	}
	return capabilities.TextResult(text), nil
}

// PresentCall implements capabilities.CallPresenter.
func (TaskKillTool) PresentCall(args json.RawMessage) capabilities.CallView {
	return taskCard(args, "Kill background task ")
}
