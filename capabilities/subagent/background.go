package subagent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/bash"
)

// TaskKind is the task registry kind of a background child ("subagent-<n>").
const TaskKind = "subagent"

// errKilled is the cause a killed background child's turn ends with.
var errKilled = errors.New("background subagent killed")

// background is a child running as a task (bash.Task): its answer is the
// task's output, read once it settled.
type background struct {
	done   chan struct{}
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	out    Outcome
	err    error
	killed bool
	read   bool
}

// startBackground runs r off the calling step: the parent's step may end,
// the child goes on until it finishes or is killed.
func startBackground(ctx context.Context, sp capabilities.Spawner, r Request) *background {
	bctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	b := &background{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(b.done)
		defer cancel(nil)
		out, err := Run(bctx, sp, r)
		b.mu.Lock()
		b.out, b.err = out, err
		b.mu.Unlock()
	}()
	return b
}

// Done implements bash.Task.
func (b *background) Done() <-chan struct{} { return b.done }

// Status implements bash.Task.
func (b *background) Status() bash.Status {
	select {
	case <-b.done:
	default:
		return bash.Status{State: bash.StateRunning}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.killed:
		return bash.Status{State: bash.StateKilled}
	case b.err != nil:
		return bash.Status{State: bash.StateFailed, Text: "failed: " + b.err.Error()}
	case b.out.Err() != nil:
		return bash.Status{State: bash.StateFailed, Text: "failed: " + b.out.Err().Error()}
	}
	return bash.Status{State: bash.StateCompleted}
}

// Read implements bash.Task: the child's answer, once, after it settled.
func (b *background) Read() bash.Output {
	select {
	case <-b.done:
	default:
		return bash.Output{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.read || b.killed {
		return bash.Output{}
	}
	b.read = true
	if b.err != nil || b.out.Err() != nil {
		return bash.Output{}
	}
	return bash.Output{Text: b.out.Text}
}

// Kill implements bash.Task.
func (b *background) Kill(ctx context.Context) error {
	b.mu.Lock()
	select {
	case <-b.done:
	default:
		b.killed = true
	}
	b.mu.Unlock()
	b.cancel(errKilled)
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runBackground starts the call's child as a task of t.Tasks.
func (t Tool) runBackground(ctx context.Context, call *capabilities.Call, sp capabilities.Spawner, r Request, label string) (capabilities.Result, error) {
	owner := ""
	if call.Session != nil {
		owner = call.Session.Log().ID()
	}
	label = strings.Join(strings.Fields(label), " ")
	id := t.Tasks.Register(TaskKind, owner, label, startBackground(ctx, sp, r))
	return capabilities.TextResult(fmt.Sprintf("started background task %s (%s). Its answer arrives with task_output once it finishes; "+
		"you are told when it does.", id, t.Name())), nil
}
