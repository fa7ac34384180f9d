package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/testbin"
)

// TestEndToEndAgainstDshACP builds dsh-acp and runs the whole suite
// against it with N=2 and a small stress.
func TestEndToEndAgainstDshACP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs dsh-acp")
	}
	tmp := t.TempDir()
	bin, err := testbin.Build(tmp, testbin.Agent, "")
	require.NoError(t, err)

	sessions := filepath.Join(tmp, "sessions")
	reportPath := filepath.Join(tmp, "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"-n", "2", "-warmup", "0", "-stress", "2000", "-stress-runs", "1",
		"-home", filepath.Join(tmp, "work"), "-json", reportPath, "-timeout", "30s",
		"-agent", "dsh-acp=" + bin + " --sessions-root " + sessions,
		"-env", "DEEPSEEK_API_KEY=x"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())

	b, err := os.ReadFile(reportPath)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Agents, 1)
	a := rep.Agents[0]
	assert.Equal(t, "dsh-acp", a.Name)
	assert.Equal(t, 2, a.Iterations)
	assert.Empty(t, a.Errors)
	for _, m := range metrics {
		s := a.Metrics[m.key]
		assert.Equal(t, 2, s.N, m.key)
		if m.key != "cancel_to_reply_ms" { // can round to zero-ish, but never negative
			assert.Positive(t, s.Median, m.key)
		}
		assert.GreaterOrEqual(t, s.Min, 0.0, m.key)
	}
	require.Len(t, rep.Stress, 1)
	st := rep.Stress[0]
	assert.Empty(t, st.Errors)
	assert.Equal(t, 1, st.Runs)
	assert.Positive(t, st.Metrics["chunks_per_s"].Median)
	assert.GreaterOrEqual(t, st.Metrics["updates"].Median, 2000.0)
	assert.Positive(t, st.Metrics["peak_rss_mb"].Median)

	// The table, and the sessions dsh-acp stored where it was told to.
	assert.Contains(t, stdout.String(), "spawn → initialize")
	assert.Contains(t, stdout.String(), "streaming stress: one 2000-chunk reply")
	ents, err := os.ReadDir(sessions)
	require.NoError(t, err)
	assert.NotEmpty(t, ents)
	_, err = os.Stat(filepath.Join(tmp, "work", "dsh-acp-home"))
	assert.NoError(t, err)
}

// TestFailingAgentIsReported runs an agent that exits at once: every
// iteration fails with a message, the exit code is 1.
func TestFailingAgentIsReported(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-n", "2", "-warmup", "0", "-stress", "0", "-q",
		"-home", t.TempDir(), "-timeout", "5s", "-agent", "broken=sh -c 'echo boom >&2; exit 3'"}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout.String(), "broken: 2 of 2 iterations failed")
	assert.Contains(t, stdout.String(), "boom")
}

func TestFlags(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"-format", "xml"}, &stderr, &stderr))
	assert.Equal(t, 2, run(context.Background(), []string{"-agent", "noequals"}, &stderr, &stderr))
	assert.Equal(t, 2, run(context.Background(), []string{"-agent", "x=/does/not/exist"}, &stderr, &stderr))
	assert.Equal(t, 2, run(context.Background(), []string{"-agent", "a=sh", "-agent", "a=sh"}, &stderr, &stderr))
	assert.Equal(t, 2, run(context.Background(), []string{"-tool", "bogus"}, &stderr, &stderr))
	assert.Equal(t, 0, run(context.Background(), []string{"-h"}, &stderr, &stderr))
}
