package composition_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A child agent in the editor's composition: its question reaches nobody
// (the contract's "no matching session"), its tool cards never reach the
// editor, the parent's card shows its progress, and session/list keeps
// it out of the history.
func TestDefaultChildAsksNobodyAndStaysOutOfTheEditor(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	p := newProvider()
	p.script("delegate the question", toolCall{"subagent", `{"description":"ask for a name","prompt":"ask the user for a name"}`})
	p.script("ask the user for a name", toolCall{"ask_user_question", `{"questions":[{"id":"n","question":"Which name?","options":[{"label":"a"},{"label":"b"}]}]}`})
	store := openStore(t, root)
	srv := serve(t, "default", store, ws, p, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, nil)
	s := srv.newSession(t, ws)
	stop, lines := srv.prompt(t, s.SessionID, "delegate the question")
	assert.Equal(t, "end_turn", stop)
	cards := map[string]bool{}
	for _, l := range lines {
		assert.NotContains(t, l, "elicitation/create", "a child's question never reaches the editor")
		var f struct {
			Params struct {
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
					ToolCallID    string `json:"toolCallId"`
				} `json:"update"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &f))
		switch u := f.Params.Update; u.SessionUpdate {
		case "tool_call":
			assert.NotContains(t, l, "ask_user_question", "a child's cards never reach the editor")
			cards[u.ToolCallID] = true
		case "tool_call_update":
			// The parent's card may name what the child does (its
			// progress); no update belongs to a card of the child's.
			assert.True(t, cards[u.ToolCallID], "an update for a card the editor never saw: %s", l)
		}
	}
	listed := srv.c.call("session/list", map[string]any{})
	var list struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
		} `json:"sessions"`
	}
	require.NoError(t, json.Unmarshal(listed, &list))
	require.Len(t, list.Sessions, 1)
	assert.Equal(t, s.SessionID, list.Sessions[0].SessionID)
	srv.stop()
	require.NoError(t, store.Close())

	files, err := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 2, "the session's log and its child's")
	var childID string
	for _, f := range files {
		if id := strings.TrimSuffix(filepath.Base(f), ".jsonl"); id != s.SessionID {
			childID = id
		}
	}
	child := readLog(t, root, childID)
	results := ofType(child, "tool/result")
	require.Len(t, results, 1)
	assert.Contains(t, results[0], "ACP user question has no matching session")
	parent := readLog(t, root, s.SessionID)
	assert.NotEmpty(t, ofType(parent, "tool/progress"), "the parent's card shows the child's progress")
}
