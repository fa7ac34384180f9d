package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every package linked into dsh-acp runs its initializer in every process,
// whether or not its code is ever used (Go cannot load a package lazily).
// These stay out of the binary; docs/performance.md ("Memory and startup")
// has the measurements.
var keptOut = map[string]string{
	"github.com/santhosh-tekuri/jsonschema/v6":      "compiles five metaschemas at init: 3.3 ms and 1.7 MB per process",
	"github.com/dsh-acp/dsh-acp/internal/acpschema": "the ACP schema checker of the tests (on santhosh-tekuri/jsonschema)",
}

func TestServerBinaryLeavesOutCostlyInitializers(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the binary's packages")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	require.NoError(t, err)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/dsh-acp/dsh-acp/acp", "the real dependency list")
	for _, p := range deps {
		why, bad := keptOut[p]
		assert.False(t, bad, "dsh-acp links %s: %s", p, why)
	}
}
