package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// report is the JSON output.
type report struct {
	Tool    string            `json:"tool"`
	Date    string            `json:"date"`
	Host    hostInfo          `json:"host"`
	N       int               `json:"n"`
	Warmup  int               `json:"warmup"`
	Agents  []agentReport     `json:"agents"`
	Stress  []stressReport    `json:"stress,omitempty"`
	Targets map[string]Target `json:"targets"`
}

type hostInfo struct {
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	CPUs   int    `json:"cpus"`
	CPU    string `json:"cpu,omitempty"`
	Kernel string `json:"kernel,omitempty"`
	Go     string `json:"go"`
}

type agentReport struct {
	Name       string             `json:"name"`
	Command    []string           `json:"command"`
	Iterations int                `json:"iterations"`
	Metrics    map[string]Summary `json:"metrics"`
	// Ratios are medians divided by the first agent's.
	Ratios map[string]float64 `json:"ratios,omitempty"`
	Errors []string           `json:"errors,omitempty"`
}

type stressReport struct {
	Name    string             `json:"name"`
	Chunks  int                `json:"chunks"`
	Runs    int                `json:"runs"`
	Metrics map[string]Summary `json:"metrics"`
	Errors  []string           `json:"errors,omitempty"`
}

// host describes this machine.
func host() hostInfo {
	h := hostInfo{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	return h
}

// output writes the report to stdout in the chosen format, and the JSON
// file if asked.
func output(cfg *config, rep *report, stdout io.Writer) error {
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	js = append(js, '\n')
	if cfg.jsonPath != "" {
		if err := os.WriteFile(cfg.jsonPath, js, 0o644); err != nil {
			return err
		}
	}
	if cfg.format == "json" {
		_, err := stdout.Write(js)
		return err
	}
	writeReport(stdout, rep, cfg.format == "markdown")
	return nil
}

// writeReport prints the side-by-side table and the stress table.
func writeReport(w io.Writer, rep *report, markdown bool) {
	write := writeText
	if markdown {
		write = writeMarkdown
	}
	h := rep.Host
	fmt.Fprintf(w, "acpbench: %s (+%d warm-up) per agent; %s/%s, %d CPUs, %s, %s\n\n",
		plural(rep.N, "iteration"), rep.Warmup, h.OS, h.Arch, h.CPUs, h.CPU, h.Go)
	cols := make([]column, len(rep.Agents))
	for i, a := range rep.Agents {
		cols[i] = column{name: a.Name, metrics: a.Metrics}
	}
	write(w, buildTable(metrics, cols))
	if rows := distribution(rep.Agents); len(rows) > 1 {
		fmt.Fprintf(w, "\nsession/new latency distribution (ms)\n\n")
		write(w, rows)
	}
	for _, a := range rep.Agents {
		if len(a.Errors) > 0 {
			fmt.Fprintf(w, "\n%s: %d of %d iterations failed:\n", a.Name, len(a.Errors), rep.N)
			for _, e := range a.Errors {
				fmt.Fprintf(w, "  %s\n", e)
			}
		}
	}
	if len(rep.Stress) == 0 {
		return
	}
	fmt.Fprintf(w, "\nstreaming stress: one %d-chunk reply, %s (+1 warm-up)\n\n", rep.Stress[0].Chunks, plural(rep.Stress[0].Runs, "run"))
	cols = make([]column, len(rep.Stress))
	for i, s := range rep.Stress {
		cols[i] = column{name: s.Name, metrics: s.Metrics}
	}
	write(w, buildTable(stressMetrics, cols))
	for _, s := range rep.Stress {
		for _, e := range s.Errors {
			fmt.Fprintf(w, "%s: stress: %s\n", s.Name, e)
		}
	}
}

// distributionKeys are the metrics whose whole distribution is shown,
// with their labels there.
var distributionKeys = []struct{ key, label string }{
	{"session_new_ms", "first session"},
	{"session_new_again_ms", "later session, no MCP server"},
	{"session_new_mcp_ms", "later session, 3 MCP servers"},
}

// distribution is a table of the session/new latencies' quantiles per
// agent (the header row alone when none were measured).
func distribution(agents []agentReport) [][]string {
	rows := [][]string{{"agent", "session/new", "n", "min", "p25", "median", "p75", "p90", "max"}}
	for _, a := range agents {
		for _, d := range distributionKeys {
			s := a.Metrics[d.key]
			if s.N == 0 {
				continue
			}
			sorted := slices.Sorted(slices.Values(s.Samples))
			label := d.label
			f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
			rows = append(rows, []string{a.Name, label, strconv.Itoa(s.N), f(s.Min), f(s.P25), f(s.Median), f(s.P75), f(quantile(sorted, 0.9)), f(s.Max)})
		}
	}
	return rows
}

// plural is "1 run", "3 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
