package hooks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// SubagentStart and SubagentStop (Claude only) run detached for a child:
// the payload is the child's, the matcher is tested against the agent
// type, SubagentStart's context is returned for the child, nothing is
// logged.
func TestSubagentStartAndStopHooks(t *testing.T) {
	cfg := `{"hooks":{
		"SubagentStart":[{"matcher":"general-purpose","hooks":[{"command":"cat > start.json; echo '{\"hookSpecificOutput\":{\"hookEventName\":\"SubagentStart\",\"additionalContext\":\"be brief\"}}'"}]},
		                 {"matcher":"Explore","hooks":[{"command":"touch wrong-matcher"}]}],
		"SubagentStop":[{"hooks":[{"command":"cat > stop.json"}]}]}}`
	b := bridge(t, Claude, cfg, nil)
	child := turnSession(t)
	c, err := b.StartSubagent(context.Background(), child)
	require.NoError(t, err)
	require.NotNil(t, c)
	require.Equal(t, "be brief", c.Content[0].Text)
	raw, err := os.ReadFile(filepath.Join(child.cwd, "start.json"))
	require.NoError(t, err)
	require.Equal(t, `{"session_id":"sid","cwd":"`+child.cwd+`","hook_event_name":"SubagentStart","agent_id":"sid","agent_type":"general-purpose"}`+"\n", string(raw))
	require.NoFileExists(t, filepath.Join(child.cwd, "wrong-matcher"))

	require.NoError(t, b.StopSubagent(context.Background(), child))
	raw, err = os.ReadFile(filepath.Join(child.cwd, "stop.json"))
	require.NoError(t, err)
	require.Equal(t, `{"session_id":"sid","cwd":"`+child.cwd+`","hook_event_name":"SubagentStop","agent_id":"sid","agent_type":"general-purpose","stop_hook_active":false}`+"\n", string(raw))
	require.Empty(t, hookEvents(child), "detached points are not logged")

	// Codex has no subagent points: the same keys are not its events.
	cx, err := Parse(Codex, []byte(cfg), ParseOptions{})
	require.NoError(t, err)
	require.Empty(t, cx.Points[SubagentStart])
}
