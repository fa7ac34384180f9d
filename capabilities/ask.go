package capabilities

import "context"

// Question is one question put to the user (ask_user_question, the plan
// review).
type Question struct {
	ID          string
	Header      string
	Question    string
	Options     []QuestionOption
	MultiSelect bool
	// CallID is the tool call asking, so a client can attach the question
	// to its card ("" when unknown).
	CallID string
}

// QuestionOption is one offered answer.
type QuestionOption struct {
	Label       string
	Description string
}

// Answer is the user's answer to one question: the selected labels, or a
// custom free-form text (which empties Selected).
type Answer struct {
	ID       string   `json:"id"`
	Selected []string `json:"selected"`
	Custom   *string  `json:"custom,omitempty"`
}

// Asker puts questions to the user of a session, in order, and returns
// their answers. Failures are *CodedError values named
// "UserInteractionError" (ASK_ABORTED, ASK_CANCELLED, ASK_FAILED,
// NO_ANSWER, NO_SESSION, ...).
type Asker interface {
	Ask(ctx context.Context, sessionID string, questions []Question) ([]Answer, error)
}

// UserInteractionError returns the coded error of the user-interaction
// service.
func UserInteractionError(code, message string) *CodedError {
	return &CodedError{Name: "UserInteractionError", Code: code, Message: message}
}
