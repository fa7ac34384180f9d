package composition

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent"
)

// Zero keeps a default, a negative value turns the ceiling off, and the
// upstream compositions have none whatever the file says.
func TestDelegationLimits(t *testing.T) {
	d := DelegationConfig{MaxLiveChildren: 4, MaxChildrenPerTurn: -1}
	def, _ := Builtin("default")
	require.Equal(t, agent.Delegation{MaxLive: 4, MaxPerTurn: 0, MaxModelCalls: DefaultMaxModelCallsPerTurn}, def.delegation(d))
	require.Equal(t, agent.Delegation{MaxLive: DefaultMaxLiveChildren, MaxPerTurn: DefaultMaxChildrenPerTurn, MaxModelCalls: DefaultMaxModelCallsPerTurn},
		def.delegation(DelegationConfig{}))
	up, _ := Builtin("acp-agent")
	require.Equal(t, agent.Delegation{}, up.delegation(d))
}
