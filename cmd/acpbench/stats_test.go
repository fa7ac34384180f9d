package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	s := summarize([]float64{5, 1, 4, 2, 3})
	assert.Equal(t, Summary{N: 5, Median: 3, MAD: 1, Min: 1, P25: 2, P75: 4, Max: 5, Mean: 3,
		Samples: []float64{5, 1, 4, 2, 3}}, s)

	s = summarize([]float64{10, 1, 2, 3})
	assert.Equal(t, 2.5, s.Median)
	assert.Equal(t, 1.0, s.MAD) // deviations 0.5 0.5 1.5 7.5
	assert.Equal(t, 1.75, s.P25)
	assert.Equal(t, 4.75, s.P75)
	assert.Equal(t, 4.0, s.Mean)

	assert.Equal(t, 0, summarize(nil).N)
	assert.Equal(t, 7.0, summarize([]float64{7}).Median)
	assert.Equal(t, 0.0, summarize([]float64{7}).MAD)
}

func TestFormatting(t *testing.T) {
	ms := metric{"x", "x", "ms", nil}
	assert.Equal(t, "0.25 ms", formatValue(ms, 0.2468))
	assert.Equal(t, "12.3 ms", formatValue(ms, 12.34))
	assert.Equal(t, "123 ms", formatValue(ms, 123.4))
	assert.Equal(t, "14.2 MB", formatValue(metric{unit: "MB"}, 14.19))
	assert.Equal(t, "312.4k/s", formatValue(metric{unit: "k/s"}, 312_400))
	assert.Equal(t, "42", formatValue(metric{}, 42))

	assert.Equal(t, "3.00 ms ±0.25", cell(ms, Summary{N: 3, Median: 3, MAD: 0.25}, nil))
	assert.Equal(t, "30.0 ms ±1.0 (10×)", cell(ms, Summary{N: 3, Median: 30, MAD: 1}, &Summary{N: 3, Median: 3}))
	assert.Equal(t, "4.50 ms ±0.00 (1.5×)", cell(ms, Summary{N: 3, Median: 4.5}, &Summary{N: 3, Median: 3}))
	assert.Equal(t, "—", cell(ms, Summary{}, nil))
	assert.Equal(t, "0.10 ms ±0.00 (0.03×)", cell(ms, Summary{N: 3, Median: 0.1}, &Summary{N: 3, Median: 3}))
	assert.Equal(t, "250.0k/s ±10.0k", cell(metric{unit: "k/s"}, Summary{N: 1, Median: 250_000, MAD: 10_000}, nil))

	lt := metric{"x", "x", "ms", &Target{Less: true, Value: 5}}
	assert.Equal(t, "< 5 ms ✓", targetCell(lt, Summary{N: 1, Median: 4.9}))
	assert.Equal(t, "< 5 ms ✗", targetCell(lt, Summary{N: 1, Median: 5}))
	assert.Equal(t, "< 5 ms", targetCell(lt, Summary{}))
	ge := metric{"x", "x", "k/s", &Target{Less: false, Value: 200_000}}
	assert.Equal(t, "≥ 200k/s ✓", targetCell(ge, Summary{N: 1, Median: 200_000}))
	assert.Equal(t, "", targetCell(ms, Summary{N: 1}))
}

func testColumns() ([]metric, []column) {
	ms := []metric{
		{"init", "spawn → initialize", "ms", &Target{Less: true, Value: 10}},
		{"rss", "  RSS", "MB", nil},
	}
	cols := []column{
		{name: "dsh-acp", metrics: map[string]Summary{"init": {N: 10, Median: 3.2, MAD: 0.1}, "rss": {N: 10, Median: 14, MAD: 0.05}}},
		{name: "peer", metrics: map[string]Summary{"init": {N: 10, Median: 320, MAD: 12}, "rss": {N: 10, Median: 140, MAD: 2}}},
	}
	return ms, cols
}

func TestTextTable(t *testing.T) {
	ms, cols := testColumns()
	var b bytes.Buffer
	writeText(&b, buildTable(ms, cols))
	assert.Equal(t, ""+
		"metric (median ± MAD)  dsh-acp        peer                 target (dsh-acp)\n"+
		"---------------------  -------------  -------------------  ----------------\n"+
		"spawn → initialize     3.20 ms ±0.10  320 ms ±12 (100×)    < 10 ms ✓\n"+
		"  RSS                  14.0 MB ±0.1   140.0 MB ±2.0 (10×)\n", b.String())
}

func TestMarkdownTable(t *testing.T) {
	ms, cols := testColumns()
	var b bytes.Buffer
	writeMarkdown(&b, buildTable(ms, cols))
	assert.Equal(t, ""+
		"| metric (median ± MAD) | dsh-acp | peer | target (dsh-acp) |\n"+
		"| --- | ---: | ---: | ---: |\n"+
		"| spawn → initialize | 3.20 ms ±0.10 | 320 ms ±12 (100×) | < 10 ms ✓ |\n"+
		"| \u00a0\u00a0RSS | 14.0 MB ±0.1 | 140.0 MB ±2.0 (10×) |  |\n", b.String())
}

func TestFillRatios(t *testing.T) {
	agents := []agentReport{
		{Name: "a", Metrics: map[string]Summary{"x": {N: 2, Median: 2}, "y": {N: 0}}},
		{Name: "b", Metrics: map[string]Summary{"x": {N: 2, Median: 5}, "y": {N: 2, Median: 1}}},
	}
	fillRatios(agents)
	assert.Nil(t, agents[0].Ratios)
	assert.Equal(t, map[string]float64{"x": 2.5}, agents[1].Ratios)
}

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string][]string{
		`bin/dsh-acp`:                        {"bin/dsh-acp"},
		`  a  b	c `:                          {"a", "b", "c"},
		`node 'x y.js' "a \"b\"" c\ d ''`:    {"node", "x y.js", `a "b"`, "c d", ""},
		`codex-acp -c 'model="mock"'`:        {"codex-acp", "-c", `model="mock"`},
		`a -c model_providers.m.base_url=$x`: {"a", "-c", "model_providers.m.base_url=$x"},
	} {
		got, err := splitCommand(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{`a 'b`, `a "b`, `a \`} {
		_, err := splitCommand(bad)
		assert.Error(t, err, bad)
	}
}

func TestAgentEnv(t *testing.T) {
	t.Setenv("HOME", "/real/home")
	t.Setenv("ACPBENCH_TEST_KEEP", "1")
	a := &agent{Name: "peer", label: "peer", home: "/tmp/h"}
	cfg := &config{envs: listFlag{"EXTRA={{mock}}/x", "peer:ONLY=1", "other:NOT=1", "OPENAI_API_KEY=sk-test"}}
	env := map[string]string{}
	for _, kv := range agentEnv(cfg, a, "http://127.0.0.1:9") {
		k, v, _ := cutEq(kv)
		env[k] = v
	}
	assert.Equal(t, "/tmp/h", env["HOME"])
	assert.Equal(t, "1", env["ACPBENCH_TEST_KEEP"])
	assert.Equal(t, "http://127.0.0.1:9/agent/peer/v1", env["DEEPSEEK_BASE_URL"])
	assert.Equal(t, "http://127.0.0.1:9/agent/peer", env["ANTHROPIC_BASE_URL"])
	assert.Equal(t, "http://127.0.0.1:9/agent/peer/x", env["EXTRA"])
	assert.Equal(t, "1", env["ONLY"])
	assert.NotContains(t, env, "NOT")
	assert.Equal(t, "sk-test", env["OPENAI_API_KEY"])

	cfg.inheritHome = true
	for _, kv := range agentEnv(cfg, a, "http://127.0.0.1:9") {
		if k, v, _ := cutEq(kv); k == "HOME" {
			assert.Equal(t, "/real/home", v)
		}
	}
}

func cutEq(kv string) (string, string, bool) {
	for i := range len(kv) {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}
