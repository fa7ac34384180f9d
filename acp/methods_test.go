package acp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/acp"
)

// TestNewSessionFollowUpAfterItsAnswer: what follows a new session (its
// command list) is written after the response that names the session,
// never before it, and a refused session/new is followed by nothing.
func TestNewSessionFollowUpAfterItsAnswer(t *testing.T) {
	h, _ := fakeHarness(t, acp.Options{PromptCommands: func(string) []acp.PromptCommand {
		return []acp.PromptCommand{{Name: "init", Description: "Describe the project", Template: "Describe it."}}
	}})
	initialize(t, h, `{}`)

	f, before := h.Call("session/new", `{"cwd":"relative","mcpServers":[]}`)
	require.NotNil(t, f.Error, "a relative cwd is refused")
	assert.Empty(t, before)
	if line, ok := h.TryNext(200 * time.Millisecond); ok {
		t.Fatalf("a refused session/new was followed by %s", line)
	}

	f, before = h.Call("session/new", `{"cwd":`+acp.JSONQuote(t.TempDir())+`,"mcpServers":[]}`)
	require.Nil(t, f.Error)
	for _, l := range before {
		assert.NotContains(t, string(l), "available_commands_update", "an update about the session before its answer")
	}
	next := string(h.Next())
	assert.True(t, strings.Contains(next, `"sessionUpdate":"available_commands_update"`) && strings.Contains(next, `"init"`),
		"the command list follows the answer: %s", next)
}

// TestMethodTableFollowsTheOptions: a method the composition does not
// answer is method not found, with the method named; the same method is
// answered once its option is on.
func TestMethodTableFollowsTheOptions(t *testing.T) {
	for _, m := range []string{"session/list", "session/resume", "session/close", "session/delete", "logout", "session/unknown"} {
		h, _ := fakeHarness(t, acp.Options{})
		f, _ := h.Call(m, `{"sessionId":"x"}`)
		require.NotNil(t, f.Error, m)
		assert.Equal(t, acp.CodeMethodNotFound, acp.ErrorCode(f.Error.Code), m)
		assert.Contains(t, f.Error.Message, m)
	}
	h, _ := fakeHarness(t, acp.Options{Features: acp.Features{ListSessions: true, Lifecycle: true}})
	for _, m := range []string{"session/list", "session/close"} { // the fake agent deletes nothing
		f, _ := h.Call(m, `{"sessionId":"x"}`)
		if f.Error != nil {
			assert.NotEqual(t, acp.CodeMethodNotFound, acp.ErrorCode(f.Error.Code), "%s: %s", m, f.Error.Message)
		}
	}
}
