package ask

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

type fakeAsker struct {
	got []capabilities.Question
	ans []capabilities.Answer
	err error
}

func (f *fakeAsker) Ask(_ context.Context, _ string, qs []capabilities.Question) ([]capabilities.Answer, error) {
	f.got = qs
	return f.ans, f.err
}

func TestAskReturnsAnswersAsJSON(t *testing.T) {
	custom := "blue-green"
	f := &fakeAsker{ans: []capabilities.Answer{{ID: "db", Selected: []string{"Postgres"}}, {ID: "deploy", Selected: []string{}, Custom: &custom}}}
	reg := capabilities.NewRegistry(Tool{Asker: f})
	out := reg.Execute(context.Background(), nil, "c1", "ask_user_question",
		`{"questions":[{"id":"db","question":"Which database?","options":[{"label":"Postgres","description":"relational"},{"label":"SQLite"}]},{"id":"deploy","question":"How to deploy?","header":"Deploy"}]}`)
	require.False(t, out.IsError, "%v", out.Content)
	require.Equal(t, `{"answers":[{"id":"db","selected":["Postgres"]},{"id":"deploy","selected":[],"custom":"blue-green"}]}`, out.Content[0].Text)
	require.Equal(t, []capabilities.Question{
		{ID: "db", Question: "Which database?", Options: []capabilities.QuestionOption{{Label: "Postgres", Description: "relational"}, {Label: "SQLite"}}, CallID: "c1"},
		{ID: "deploy", Question: "How to deploy?", Header: "Deploy", CallID: "c1"},
	}, f.got)
}

func TestAskErrorsAreCoded(t *testing.T) {
	f := &fakeAsker{err: capabilities.UserInteractionError("ASK_CANCELLED", "ask_user_question was cancelled by the user")}
	out := capabilities.NewRegistry(Tool{Asker: f}).Execute(context.Background(), nil, "c1", "ask_user_question", `{"questions":[{"id":"q","question":"?"}]}`)
	require.True(t, out.IsError)
	require.Equal(t, "Error: ask_user_question was cancelled by the user", out.Content[0].Text)
	require.Equal(t, "ASK_CANCELLED", out.Error.Code)
	out = capabilities.NewRegistry(Tool{}).Execute(context.Background(), nil, "c1", "ask_user_question", `{"questions":[{"id":"q","question":"?"}]}`)
	require.Equal(t, "Error: no user-interaction provider is registered", out.Content[0].Text)
	out = capabilities.NewRegistry(Tool{Asker: f}).Execute(context.Background(), nil, "c1", "ask_user_question", `{"questions":[{"id":"q"}]}`)
	require.Equal(t, `Error: invalid arguments: missing required property "questions[0].question"`, out.Content[0].Text)
}
