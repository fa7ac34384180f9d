package composition_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A client that advertises the unstable subagents capability sees each
// child announced on the parent (subagent_update, before any of the
// child's traffic) and then the child's own session updates under its id;
// a client that does not sees neither.
func TestSubagentSessionsForClientsThatShowThem(t *testing.T) {
	for _, shows := range []bool{true, false} {
		root, ws := t.TempDir(), t.TempDir()
		p := newProvider()
		p.script("delegate", toolCall{"subagent", `{"description":"count files","prompt":"count the files"}`})
		caps := map[string]any{}
		if shows {
			caps["subagents"] = map[string]any{}
		}
		srv := serve(t, "default", openStore(t, root), ws, p, caps, nil)
		parent := srv.newSession(t, ws).SessionID
		stop, lines := srv.prompt(t, parent, "delegate")
		require.Equal(t, "end_turn", stop)

		announced, child, first := -1, "", -1
		for i, l := range lines {
			var f struct {
				Method string `json:"method"`
				Params struct {
					SessionID string `json:"sessionId"`
					Update    struct {
						SessionUpdate string `json:"sessionUpdate"`
						SessionID     string `json:"sessionId"`
						Title         string `json:"title"`
						Cwd           string `json:"cwd"`
					} `json:"update"`
				} `json:"params"`
			}
			require.NoError(t, json.Unmarshal([]byte(l), &f))
			if f.Method != "session/update" {
				continue
			}
			if f.Params.Update.SessionUpdate == "subagent_update" {
				assert.Equal(t, parent, f.Params.SessionID, "announced on the parent")
				assert.Equal(t, "count files", f.Params.Update.Title)
				assert.Equal(t, ws, f.Params.Update.Cwd)
				announced, child = i, f.Params.Update.SessionID
				continue
			}
			if f.Params.SessionID != parent && first < 0 {
				first = i
				assert.Equal(t, child, f.Params.SessionID, "only an announced child streams")
			}
		}
		if !shows {
			assert.Equal(t, -1, announced)
			assert.Equal(t, -1, first, "no child traffic without the capability")
			continue
		}
		require.GreaterOrEqual(t, announced, 0, "the child is announced")
		require.Greater(t, first, announced, "the announcement comes before the child's traffic")
		var childText bool
		for _, l := range lines {
			childText = childText || (strings.Contains(l, `"sessionId":"`+child+`"`) && strings.Contains(l, "user_message_chunk"))
		}
		assert.True(t, childText, "the child's session shows its prompt")
	}
}
