package hooks

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/capabilities/bash"
)

// A hook gets the environment bash commands get: secret-looking names
// dropped unless passed, the configured extra names stripped.
func TestHooksFollowTheCommandsEnvironmentPolicy(t *testing.T) {
	environ := func() []string {
		return []string{"PATH=/usr/bin:/bin", "DEEPSEEK_API_KEY=sk-secret", "GITHUB_TOKEN=gh-pass", "CORP_ID=c-strip", "PLAIN=kept"}
	}
	r := &Runner{Environ: environ, Env: bash.EnvPolicy{Pass: []string{"GITHUB_TOKEN"}, Strip: []string{"CORP_*"}}}
	dir := t.TempDir()
	run := r.Run(context.Background(), stubSession{cwd: dir}, Spec{Command: "env", Dir: dir, Timeout: 10 * time.Second})
	require.NotNil(t, run.ExitCode)
	assert.Contains(t, run.Stdout, "PLAIN=kept")
	assert.Contains(t, run.Stdout, "GITHUB_TOKEN=gh-pass", "a passed name reaches the hook")
	assert.NotContains(t, run.Stdout, "sk-secret")
	assert.NotContains(t, run.Stdout, "c-strip", "a stripped name does not")
}
