package bash

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// Task states.
const (
	StateRunning   = "running"
	StateCompleted = "completed"
	StateKilled    = "killed"
	StateFailed    = "failed"
)

// Status is a task's state and the text of its status line.
type Status struct {
	// State is one of the State* constants.
	State string
	// Text is the status line's content, e.g. "completed, exit code: 0" or
	// "killed by SIGTERM"; empty means State alone.
	Text string
}

// Line is the status line: "[status: <text>]".
func (s Status) Line() string {
	t := s.Text
	if t == "" {
		t = s.State
	}
	return "[status: " + t + "]"
}

// Output is one read of a task's output.
type Output struct {
	// Text is what the task produced since the previous read ("" if
	// nothing).
	Text string
	// Notes are lines shown after the text and before the status line
	// (e.g. that output was dropped from memory).
	Notes []string
	// Trailer are lines shown after the status line.
	Trailer []string
}

// Task is one unit of background work a producer (bash, later subagents)
// registers with Tasks.
type Task interface {
	// Done is closed once the task has settled.
	Done() <-chan struct{}
	// Status is the task's current status.
	Status() Status
	// Read returns the output produced since the previous Read.
	Read() Output
	// Kill stops the task and returns once it has settled or ctx ends.
	Kill(ctx context.Context) error
}

// TaskInfo describes a registered task.
type TaskInfo struct {
	// ID is "<kind>-<n>".
	ID string
	// Kind is the producer's kind ("bash").
	Kind string
	// Label says what the task runs (bash: the command on one line).
	Label string
	// Owner is the id of the session that started the task.
	Owner string
	// Status is the task's status when the info was taken.
	Status Status
}

// Notice is the completion notice for a settled task, meant to be injected
// into its owner's conversation.
func Notice(info TaskInfo) string {
	return fmt.Sprintf("background task %s (%s: %s) finished %s. Read its output with task_output.",
		info.ID, info.Kind, info.Label, info.Status.State)
}

// Tasks is a registry of background tasks shared by their producers. Ids are
// "<kind>-<n>", counted per kind from 1. Every operation is fenced by owner
// (the calling session's id).
type Tasks struct {
	onSettle func(TaskInfo)

	mu    sync.Mutex
	next  map[string]int
	byID  map[string]*taskEntry
	order []*taskEntry
}

type taskEntry struct {
	id, kind, label, owner string
	task                   Task
	readMu                 sync.Mutex // serializes reads so deltas do not interleave
}

func (e *taskEntry) info() TaskInfo {
	return TaskInfo{ID: e.id, Kind: e.kind, Label: e.label, Owner: e.owner, Status: e.task.Status()}
}

// NewTasks returns an empty registry. onSettle, if not nil, is called once
// per task when it settles (from the task's own goroutine); the agent uses it
// to inject Notice into the owner's conversation.
func NewTasks(onSettle func(TaskInfo)) *Tasks {
	return &Tasks{onSettle: onSettle, next: map[string]int{}, byID: map[string]*taskEntry{}}
}

// Register adds a started task and returns its id.
func (t *Tasks) Register(kind, owner, label string, task Task) string {
	t.mu.Lock()
	t.next[kind]++
	e := &taskEntry{id: kind + "-" + strconv.Itoa(t.next[kind]), kind: kind, label: label, owner: owner, task: task}
	t.byID[e.id] = e
	t.order = append(t.order, e)
	t.mu.Unlock()
	go func() {
		<-task.Done()
		if t.onSettle != nil {
			t.onSettle(e.info())
		}
	}()
	return e.id
}

// lookup finds owner's task id, with the tool-facing error texts.
func (t *Tasks) lookup(owner, id string) (*taskEntry, error) {
	if id == "" {
		return nil, fmt.Errorf("invalid task_id: expected a string, got %s", jsonx.MustMarshal(id))
	}
	t.mu.Lock()
	e, ok := t.byID[id]
	t.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown task %s", jsonx.MustMarshal(id))
	}
	if e.owner != owner {
		return nil, fmt.Errorf("task %s belongs to another session", id)
	}
	return e, nil
}

// Output returns what task id produced since the previous read, then its
// status line: "<text | (no new output)>[\n<note>…]\n[status: …][\n<trailer>…]".
func (t *Tasks) Output(owner, id string) (string, error) {
	e, err := t.lookup(owner, id)
	if err != nil {
		return "", err
	}
	e.readMu.Lock()
	defer e.readMu.Unlock()
	// Status first: if it says settled, the read below has all the output.
	st := e.task.Status()
	out := e.task.Read()
	text := out.Text
	if text == "" {
		text = "(no new output)"
	}
	var b strings.Builder
	b.WriteString(text)
	for _, n := range out.Notes {
		b.WriteString("\n" + n)
	}
	b.WriteString("\n" + st.Line())
	for _, n := range out.Trailer {
		b.WriteString("\n" + n)
	}
	return b.String(), nil
}

// Kill stops task id and waits for it to settle (or ctx to end).
func (t *Tasks) Kill(ctx context.Context, owner, id string) (string, error) {
	e, err := t.lookup(owner, id)
	if err != nil {
		return "", err
	}
	select {
	case <-e.task.Done():
		return fmt.Sprintf("task %s had already finished", id), nil
	default:
	}
	if err := e.task.Kill(ctx); err != nil {
		return "", fmt.Errorf("kill task %s: %w", id, err)
	}
	return fmt.Sprintf("killed background task %s", id), nil
}

// List returns owner's tasks, in registration order.
func (t *Tasks) List(owner string) []TaskInfo {
	var out []TaskInfo
	for _, e := range t.entries(owner) {
		out = append(out, e.info())
	}
	return out
}

// ListText is task_list's result: one "<id> (<kind>: <label>) [status: …]"
// line per task of owner, or "(no background tasks)".
func (t *Tasks) ListText(owner string) string {
	infos := t.List(owner)
	if len(infos) == 0 {
		return "(no background tasks)"
	}
	lines := make([]string, len(infos))
	for i, in := range infos {
		lines[i] = fmt.Sprintf("%s (%s: %s) %s", in.ID, in.Kind, in.Label, in.Status.Line())
	}
	return strings.Join(lines, "\n")
}

// KillOwner stops every running task of owner (session disposal) and waits
// for them to settle or ctx to end.
func (t *Tasks) KillOwner(ctx context.Context, owner string) {
	t.killAll(ctx, t.entries(owner))
}

// Close stops every running task and waits for them to settle or ctx to
// end.
func (t *Tasks) Close(ctx context.Context) {
	t.mu.Lock()
	all := append([]*taskEntry(nil), t.order...)
	t.mu.Unlock()
	t.killAll(ctx, all)
}

func (t *Tasks) entries(owner string) []*taskEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*taskEntry
	for _, e := range t.order {
		if e.owner == owner {
			out = append(out, e)
		}
	}
	return out
}

func (t *Tasks) killAll(ctx context.Context, es []*taskEntry) {
	var wg sync.WaitGroup
	for _, e := range es {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = e.task.Kill(ctx)
		}()
	}
	wg.Wait()
}
