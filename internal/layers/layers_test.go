package layers

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModuleImportsOneWay is the dependency test: the module's real import
// graph, as go list reports it, breaks no rule of Module.
func TestModuleImportsOneWay(t *testing.T) {
	t.Parallel()
	graph, err := Load(context.Background(), filepath.Join("..", ".."))
	require.NoError(t, err)
	// The graph is the real one, not an empty list that passes vacuously.
	byPath := map[string]Package{}
	for _, p := range graph {
		byPath[p.Path] = p
	}
	require.Contains(t, byPath["acp"].Imports, "agent")
	require.Contains(t, byPath["composition"].Imports, "acp")
	require.True(t, byPath["session/storetest"].TestSupport)
	require.False(t, byPath["session"].TestSupport)

	for _, v := range Module().Check(graph) {
		t.Error(v)
	}
}

func TestCheckRefusesEachRule(t *testing.T) {
	t.Parallel()
	graph := []Package{
		{Path: "cmd/dsh-acp", Imports: []string{"composition", "snapshots", "sandbox"}},
		{Path: "composition", Imports: []string{"acp", "agent/llm/deepseek"}},
		{Path: "acp", Imports: []string{"agent", "agent/llm", "agent/llm/replay", "composition"}},
		{Path: "agent", Imports: []string{"agent/llm", "capabilities", "capabilities/pipeline", "agent/agenttest"}},
		{Path: "agent/llm", Imports: []string{"session"}},
		{Path: "agent/llm/replay", Imports: []string{"agent/llm"}},
		{Path: "capabilities/pipeline", Imports: []string{"session", "capabilities", "agent"}},
		{Path: "capabilities", Imports: []string{"session", "internal/jsonx"}},
		{Path: "capabilities/fs", Imports: []string{"capabilities", "capabilities/pipeline", "approval", "sandbox"}},
		{Path: "capabilities/hooks", Imports: []string{"agent"}},
		{Path: "capabilities/web", Imports: []string{"agent/llm"}},
		{Path: "agent/agenttest", Imports: []string{"agent", "agent/llm", "session"}, TestSupport: true},
		{Path: "approval", Imports: []string{"session"}},
		{Path: "sandbox", Imports: []string{"internal/jsonx", "fixtures"}},
		{Path: "session", Imports: []string{"capabilities"}},
		{Path: "session/jsonl", Imports: []string{"session", "internal/jsonx"}},
		{Path: "internal/jsonx"},
		{Path: "fixtures"},
		{Path: "newthing", Imports: []string{"session"}},
	}
	got := map[string]string{}
	for _, v := range Module().Check(graph) {
		got[v.From+" -> "+v.To] = v.Why
	}
	assert.Equal(t, map[string]string{
		"acp -> agent/llm/replay":        "acp never imports a model provider",
		"acp -> composition":             `layer "wire" imports the higher layer "composition"`,
		"agent -> agent/agenttest":       "only tests may import test support",
		"capabilities/pipeline -> agent": "capabilities never import agent",
		"capabilities/hooks -> agent":    "capabilities never import agent",
		"capabilities/web -> agent/llm":  "capabilities never import agent",
		"sandbox -> fixtures":            "only tests may import test support",
		"session -> capabilities":        `layer "foundation" imports the higher layer "capabilities"`,
		"newthing -> ":                   "in no layer (place it in internal/layers.Module)",
	}, got)
}

func TestCheckAcceptsTheLayerOrder(t *testing.T) {
	t.Parallel()
	graph := []Package{
		{Path: "cmd/dsh-acp", Imports: []string{"snapshots", "composition", "acp", "agent/llm/deepseek", "session/jsonl", "sandbox"}},
		{Path: "snapshots", Imports: []string{"composition", "agent/llm/replay", "internal/textenc"}},
		{Path: "composition", Imports: []string{"acp", "agent", "capabilities/bash", "approval"}},
		{Path: "acp", Imports: []string{"agent", "agent/llm", "capabilities", "session", "approval"}},
		{Path: "agent", Imports: []string{"agent/llm", "capabilities/pipeline", "capabilities", "session"}},
		{Path: "capabilities/guard", Imports: []string{"capabilities/pipeline", "capabilities", "internal/jsonx"}},
		{Path: "capabilities/subagent", Imports: []string{"capabilities/pipeline", "capabilities"}},
		{Path: "agent/agenttest", Imports: []string{"agent", "agent/llm", "capabilities", "session"}, TestSupport: true},
		{Path: "approval", Imports: []string{"session"}},
		{Path: "session/storetest", Imports: []string{"session"}, TestSupport: true},
	}
	assert.Empty(t, Module().Check(graph))
}

func TestMatch(t *testing.T) {
	t.Parallel()
	assert.True(t, Match("agent", "agent"))
	assert.False(t, Match("agent", "agent/llm"))
	assert.True(t, Match("agent/llm/...", "agent/llm"))
	assert.True(t, Match("agent/llm/...", "agent/llm/deepseek"))
	assert.False(t, Match("agent/llm/...", "agent/llmx"))
}

// TestLoadFindsAnUpwardImport runs the whole check, go list included, on a
// throwaway module whose session package imports agent: the dependency
// test can fail.
func TestLoadFindsAnUpwardImport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("agent/agent.go", "package agent\n\n// Run runs.\nfunc Run() {}\n")
	write("session/session.go", "package session\n\nimport \"example.com/m/agent\"\n\n// Log logs.\nfunc Log() { agent.Run() }\n")
	write("session/session_test.go", "package session\n\nimport \"testing\"\n\nfunc TestLog(t *testing.T) {}\n")

	graph, err := Load(context.Background(), dir)
	require.NoError(t, err)
	assert.ElementsMatch(t, []Package{{Path: "agent"}, {Path: "session", Imports: []string{"agent"}}}, graph,
		"test files' imports are not the package's")
	assert.Equal(t, []Violation{{"session", "agent", `layer "foundation" imports the higher layer "agent"`}},
		Module().Check(graph))
}
