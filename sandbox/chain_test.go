package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChainPerSystem checks the per-OS selection of § 2 on any system:
// Linux probes bwrap then Landlock, darwin has Seatbelt alone (contract
// form for the upstream compositions), Windows nothing; and an empty
// chain fails every confined mode closed with the contract's message while
// danger-full-access runs as it is.
func TestChainPerSystem(t *testing.T) {
	names := func(chain []Backend) []string {
		var out []string
		for _, b := range chain {
			out = append(out, b.Name())
		}
		return out
	}
	assert.Equal(t, []string{"bwrap", "landlock"}, names(ChainFor("linux", []string{"x"}, false)))
	assert.Equal(t, []string{"seatbelt"}, names(ChainFor("darwin", nil, false)))
	assert.False(t, ChainFor("darwin", nil, false)[0].(*Seatbelt).Contract)
	assert.True(t, ChainFor("darwin", nil, true)[0].(*Seatbelt).Contract)
	assert.Empty(t, ChainFor("windows", nil, false))

	win := NewProvider(ChainFor("windows", nil, false)...)
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		_, err := win.Confine(t.Context(), []string{"bash", "-c", "true"}, Policy{Mode: m, WorkspaceRoot: t.TempDir()})
		require.True(t, IsUnavailable(err), "%s: %v", m, err)
		assert.Equal(t, `sandbox mode "`+string(m)+`" is requested but no sandbox backend is usable on this host; refusing to run the command unconfined. Install bubblewrap or run a Landlock-enforcing kernel (Linux), ensure sandbox-exec is usable (macOS) — Windows has no confinement backend yet — or switch the consumer to danger-full-access.`, err.Error())
	}
	c, err := win.Confine(t.Context(), []string{"bash", "-c", "true"}, Policy{Mode: DangerFullAccess})
	require.NoError(t, err)
	assert.Equal(t, []string{"bash", "-c", "true"}, c.Argv)
}
