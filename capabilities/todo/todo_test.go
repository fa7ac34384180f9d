package todo

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/session"
)

type env struct{ log *session.Log }

func (e env) Cwd() string       { return "/w" }
func (e env) Log() *session.Log { return e.log }

func (e env) Host() *capabilities.Host { return nil }

func TestTodoWrite(t *testing.T) {
	log := session.NewLog(session.Header{ID: "s"}, func() int64 { return 0 }, nil)
	reg := capabilities.NewRegistry(Tool{})
	run := func(args string) capabilities.Outcome {
		return reg.Execute(context.Background(), env{log}, "c", "todo_write", args)
	}
	out := run(`{"todos":[{"content":" read ","status":"in_progress"},{"content":"fix","status":"pending"},{"content":"ship","status":"completed"}]}`)
	require.False(t, out.IsError)
	require.Equal(t, "Updated todo list: 1 pending, 1 in progress, 1 completed.", out.Content[0].Text)
	ev := log.Events()
	require.Len(t, ev, 1)
	require.Equal(t, `{"todos":[{"content":"read","status":"in_progress"},{"content":"fix","status":"pending"},{"content":"ship","status":"completed"}]}`, string(ev[0].Data))

	for args, want := range map[string]string{
		`{"todos":[{"content":"  ","status":"pending"}]}`:                                           "Error: invalid todo: `content` must be a non-empty string",
		`{"todos":[{"content":"a","status":"pending"},{"content":" a","status":"pending"}]}`:        `Error: invalid todos: duplicate content "a"`,
		`{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`: "Error: invalid todos: at most one task may be in_progress, got 2",
		`{"todos":[{"content":"a","status":"done"}]}`:                                               `Error: invalid arguments: "todos[0].status" must be one of ["pending","in_progress","completed"]`,
	} {
		out := run(args)
		require.True(t, out.IsError, args)
		require.Equal(t, want, out.Content[0].Text, args)
	}
	require.Len(t, log.Events(), 1, "failed calls record nothing")
}
