package composition_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/composition"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

func TestConfigPathAndSessionsRoot(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	require.Equal(t, "/x/c.json", composition.ConfigPath(env(map[string]string{"DSH_ACP_CONFIG": "/x/c.json", "XDG_CONFIG_HOME": "/y"})))
	require.Equal(t, "/y/dsh-acp/config.json", composition.ConfigPath(env(map[string]string{"XDG_CONFIG_HOME": "/y", "HOME": "/h"})))
	require.Equal(t, "/h/.config/dsh-acp/config.json", composition.ConfigPath(env(map[string]string{"HOME": "/h"})))
	require.Equal(t, "/s/dsh-acp/sessions", composition.DefaultSessionsRoot(env(map[string]string{"XDG_STATE_HOME": "/s"})))
	require.Equal(t, "/h/.local/state/dsh-acp/sessions", composition.DefaultSessionsRoot(env(map[string]string{"HOME": "/h"})))
}

func TestUserConfig(t *testing.T) {
	dir := t.TempDir()
	missing, err := composition.LoadUserConfig(filepath.Join(dir, "none.json"))
	require.NoError(t, err, "a missing file is an empty config")
	require.Equal(t, composition.UserConfig{}, missing)

	p := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"model":"deepseek-chat","sandbox":"read-only","approval":"never","store":"sqlite"}`), 0o600))
	u, err := composition.LoadUserConfig(p)
	require.NoError(t, err)
	def, _ := composition.Builtin("default")
	c, err := def.Apply(u)
	require.NoError(t, err)
	require.Equal(t, "deepseek-chat", c.Model)
	require.Equal(t, sandbox.ReadOnly, c.Sandbox)
	require.Equal(t, approval.PolicyNever, c.Approval)

	up, _ := composition.Builtin("sandbox-acp-agent")
	kept, err := up.Apply(u)
	require.NoError(t, err)
	require.Equal(t, up, kept, "upstream-mirroring compositions ignore the user's settings")

	require.NoError(t, os.WriteFile(p, []byte(`{"modle":"typo"}`), 0o600))
	_, err = composition.LoadUserConfig(p)
	require.ErrorContains(t, err, `unknown field "modle"`)
	require.NoError(t, os.WriteFile(p, []byte(`{"store":"postgres"}`), 0o600))
	_, err = composition.LoadUserConfig(p)
	require.ErrorContains(t, err, `store must be "jsonl" or "sqlite"`)
	_, err = def.Apply(composition.UserConfig{Sandbox: "yolo"})
	require.ErrorContains(t, err, `unknown sandbox mode "yolo"`)
}

func TestCompositionFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"base":"default","name":"no-shell","tools":["fs","todo"]}`), 0o600))
	c, err := composition.Load(p)
	require.NoError(t, err)
	require.Equal(t, "no-shell", c.Name)
	require.Equal(t, []composition.Family{composition.FamilyFS, composition.FamilyTodo}, c.Tools)
	require.True(t, c.Undo, "fields not in the file come from the base")

	reg := c.Registry(nil, composition.Deps{})
	var names []string
	for _, tool := range reg.Tools() {
		names = append(names, tool.Name())
	}
	require.Equal(t, []string{"edit", "read", "todo_write", "write"}, names)

	require.NoError(t, os.WriteFile(p, []byte(`{"tools":["teleport"]}`), 0o600))
	_, err = composition.Load(p)
	require.ErrorContains(t, err, `unknown tool family "teleport"`)
	_, err = composition.Load("no-such-composition")
	require.ErrorContains(t, err, "neither a built-in")

	require.NoError(t, os.WriteFile(p, []byte(`{"base":"default","parallelTools":["read"]}`), 0o600))
	_, err = composition.Load(p)
	require.ErrorContains(t, err, "set parallelReads", "the old name list is refused, not ignored")
	require.NoError(t, os.WriteFile(p, []byte(`{"base":"default","parallelReads":false}`), 0o600))
	c, err = composition.Load(p)
	require.NoError(t, err)
	require.False(t, c.ParallelReads)
}

func TestBuiltinToolsInWireOrder(t *testing.T) {
	for name, want := range map[string][]string{
		"acp-agent":         {"bash", "edit", "read", "subagent", "subagent_fork", "task_kill", "task_list", "task_output", "todo_write", "workflow", "write"},
		"sandbox-acp-agent": {"bash", "task_kill", "task_list", "task_output"},
		"plan-acp-agent":    {"edit", "exit_plan_mode", "read", "todo_write", "write"},
		"default":           {"ask_user_question", "bash", "edit", "exit_plan_mode", "glob", "grep", "read", "run_code", "subagent", "subagent_fork", "task_kill", "task_list", "task_output", "todo_write", "web_fetch", "workflow", "write"},
	} {
		c, ok := composition.Builtin(name)
		require.True(t, ok)
		var got []string
		for _, tool := range c.Registry(nil, composition.Deps{}).Tools() {
			got = append(got, tool.Name())
		}
		require.Equal(t, want, got, name)
	}
}

func TestUserConfigNetworkAndLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"maxSteps":7,
		"network":{"connectTimeoutSec":2.5,"headerTimeoutSec":30,"idleTimeoutSec":-1,"maxRetries":2,"retryBudgetSec":10},
		"limits":{"maxLineBytes":1048576,"maxPromptBytes":65536}}`), 0o600))
	c, err := composition.LoadUserConfig(path)
	require.NoError(t, err)
	require.Equal(t, 7, c.MaxSteps)
	require.Equal(t, 2500*time.Millisecond, c.Network.ConnectTimeout())
	require.Equal(t, 30*time.Second, c.Network.HeaderTimeout())
	require.Less(t, c.Network.IdleTimeout(), time.Duration(0), "negative turns the timeout off")
	require.Equal(t, 2, c.Network.MaxRetries)
	require.Equal(t, 10*time.Second, c.Network.RetryBudget())
	require.Equal(t, composition.LimitsConfig{MaxLineBytes: 1 << 20, MaxPromptBytes: 1 << 16}, c.Limits)

	require.NoError(t, os.WriteFile(path, []byte(`{"network":{"timeout":3}}`), 0o600))
	_, err = composition.LoadUserConfig(path)
	require.ErrorContains(t, err, "timeout", "an unknown key is named")
}

func TestUserConfigEnvReachesTheComposition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"env":{"pass":["GITHUB_TOKEN"],"strip":["CORP_*"]}}`), 0o600))
	u, err := composition.LoadUserConfig(path)
	require.NoError(t, err)
	def, _ := composition.Builtin("default")
	c, err := def.Apply(u)
	require.NoError(t, err)
	require.Equal(t, []string{"GITHUB_TOKEN"}, c.EnvPass)
	require.Equal(t, []string{"CORP_*"}, c.EnvStrip)
	up, _ := composition.Builtin("sandbox-acp-agent")
	c, err = up.Apply(u)
	require.NoError(t, err)
	require.Empty(t, c.EnvPass, "upstream compositions ignore the user config")

	_, err = def.Apply(composition.UserConfig{Env: composition.EnvConfig{Strip: []string{"["}}})
	require.ErrorContains(t, err, "environment pattern")
}

func TestUserConfigDelegation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"delegation":{"maxLiveChildren":4,"maxChildrenPerTurn":-1,"maxModelCallsPerTurn":50}}`), 0o600))
	c, err := composition.LoadUserConfig(path)
	require.NoError(t, err)
	require.Equal(t, composition.DelegationConfig{MaxLiveChildren: 4, MaxChildrenPerTurn: -1, MaxModelCallsPerTurn: 50}, c.Delegation)

	require.NoError(t, os.WriteFile(path, []byte(`{"delegation":{"maxChildren":3}}`), 0o600))
	_, err = composition.LoadUserConfig(path)
	require.ErrorContains(t, err, "maxChildren", "an unknown key is named")
}

// The containment is the default composition's alone; the user's settings
// extend its lists and set the Network default; upstream compositions
// ignore them.
func TestContainmentConfig(t *testing.T) {
	def, _ := composition.Builtin("default")
	require.NotNil(t, def.Containment)
	for _, name := range composition.BuiltinNames()[1:] {
		c, _ := composition.Builtin(name)
		require.Nil(t, c.Containment, name)
	}
	u := composition.UserConfig{Containment: composition.Containment{Network: "on", Secrets: []string{"~/.vault-token"}, Protected: []string{"Makefile"}}}
	got, err := def.Apply(u)
	require.NoError(t, err)
	require.Equal(t, "on", got.Containment.Network)
	require.Equal(t, []string{"~/.vault-token"}, got.Containment.Secrets)
	require.Equal(t, []string{"Makefile"}, got.Containment.Protected)
	require.Equal(t, "off", def.Containment.Network, "the built-in default is not changed")
	up, _ := composition.Builtin("sandbox-acp-agent")
	up, err = up.Apply(u)
	require.NoError(t, err)
	require.Nil(t, up.Containment)
	_, err = def.Apply(composition.UserConfig{Containment: composition.Containment{Network: "maybe"}})
	require.ErrorContains(t, err, "network")
	_, err = def.Apply(composition.UserConfig{Containment: composition.Containment{Protected: []string{"/abs"}}})
	require.ErrorContains(t, err, "relative")
}
