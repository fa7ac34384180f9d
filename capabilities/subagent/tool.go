package subagent

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/bash"
	"github.com/dsh-acp/dsh-acp/session"
)

// Tool names.
const (
	SpawnName = "subagent"
	ForkName  = "subagent_fork"
)

// Tool is subagent (spawn) or subagent_fork (fork).
type Tool struct {
	// Fork makes it subagent_fork.
	Fork bool
	// Progress, when set, is told about the child's events while it runs
	// (the default composition's live card); upstream shows nothing.
	Progress Progress
	// Tasks, when set, offers run_in_background: the child runs as a task
	// of this registry (task_output, task_list, task_kill) and the call
	// returns at once.
	Tasks *bash.Tasks
}

// Progress receives a running child's events for the parent's tool call.
type Progress interface {
	// Child is called for every event the child appends, in order.
	Child(call *capabilities.Call, childID string, e session.Event)
	// Done is called once the call's child is finished.
	Done(callID string)
}

// Traits implements capabilities.Tool: the child does what its own tools' traits say.
func (Tool) Traits() capabilities.Traits { return capabilities.Traits{Delegates: true} }

// Name implements capabilities.Tool.
func (t Tool) Name() string {
	if t.Fork {
		return ForkName
	}
	return SpawnName
}

// Description implements capabilities.Tool.
func (t Tool) Description() string {
	if t.Fork {
		return "Delegate a self-contained subtask to a forked child agent that starts with this conversation so far " +
			"(every completed turn) and the same tools. It runs to completion and returns its final answer as the result. " +
			"Use it when the subtask needs what was already said."
	}
	return "Delegate a self-contained subtask to a fresh child agent with the same tools but none of this conversation: " +
		"write the prompt so that it stands on its own. The child runs to completion and its final answer is the result."
}

// Schema implements capabilities.Tool.
func (t Tool) Schema() *capabilities.Schema {
	s := capabilities.Object(
		capabilities.Req("description", capabilities.String("A short (3-5 word) label for the subtask.")),
		capabilities.Req("prompt", capabilities.String("The complete task for the child agent.")),
	)
	if t.Tasks != nil {
		s.Properties = append(s.Properties, capabilities.Opt("run_in_background", capabilities.Boolean(
			"Run the child as a background task and return at once; read its answer with task_output.")))
	}
	return s
}

// Run implements capabilities.Tool.
func (t Tool) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	sp := capabilities.HostOf(call.Session).Spawner
	if sp == nil {
		return capabilities.Result{}, errors.New(ErrNoAgent)
	}
	var args struct {
		Description string `json:"description"`
		Prompt      string `json:"prompt"`
		Background  bool   `json:"run_in_background"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return capabilities.Result{}, err
	}
	r := Request{Fork: t.Fork, Prompt: args.Prompt, Title: args.Description}
	if args.Background && t.Tasks != nil {
		return t.runBackground(ctx, call, sp, r, args.Description)
	}
	if t.Progress != nil {
		var id string
		r.OnStart = func(child string) { id = child }
		r.Observe = func(e session.Event) { t.Progress.Child(call, id, e) }
		defer t.Progress.Done(call.CallID)
	}
	out, err := Run(ctx, sp, r)
	if err != nil {
		return capabilities.Result{}, err
	}
	if err := out.Err(); err != nil {
		return capabilities.Result{}, err
	}
	if out.Text == "" {
		return capabilities.Result{}, errors.New(ErrDeclined)
	}
	return capabilities.TextResult(out.Text), nil
}

// EditorTool is Tool with a card of its own for editor users (the default
// composition): titled by the task's description, kind "think", instead
// of upstream's generic "subagent" card.
type EditorTool struct{ Tool }

// PresentCall implements capabilities.CallPresenter.
func (t EditorTool) PresentCall(args json.RawMessage) capabilities.CallView {
	var a struct {
		Description string `json:"description"`
	}
	_ = json.Unmarshal(args, &a)
	title := "Subagent: " + a.Description
	if t.Fork {
		title = "Forked subagent: " + a.Description
	}
	return capabilities.CallView{Kind: capabilities.ViewGeneric, Title: title, ToolKind: capabilities.ToolKindThink, RawInput: args}
}
