package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Summary describes the samples of one metric.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	// MAD is the median absolute deviation from the median: the spread
	// shown as "±" in the table.
	MAD     float64   `json:"mad"`
	Min     float64   `json:"min"`
	P25     float64   `json:"p25"`
	P75     float64   `json:"p75"`
	Max     float64   `json:"max"`
	Mean    float64   `json:"mean"`
	Samples []float64 `json:"samples"`
}

// summarize computes the summary of xs (N = 0 when empty).
func summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{Samples: []float64{}}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	med := quantile(s, 0.5)
	dev := make([]float64, len(s))
	for i, x := range s {
		dev[i] = math.Abs(x - med)
	}
	slices.Sort(dev)
	return Summary{N: len(s), Median: med, MAD: quantile(dev, 0.5), Min: s[0], P25: quantile(s, 0.25),
		P75: quantile(s, 0.75), Max: s[len(s)-1], Mean: sum / float64(len(s)), Samples: slices.Clone(xs)}
}

// quantile interpolates linearly between the closest ranks of sorted s.
func quantile(s []float64, q float64) float64 {
	if len(s) == 1 {
		return s[0]
	}
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	frac := pos - float64(lo)
	return s[lo] + frac*(s[lo+1]-s[lo])
}

// Target is an objective for the first agent's median.
type Target struct {
	// Less is true for "below Value", false for "at least Value".
	Less  bool    `json:"less"`
	Value float64 `json:"value"`
}

// met reports whether v meets the target.
func (t Target) met(v float64) bool {
	if t.Less {
		return v < t.Value
	}
	return v >= t.Value
}

// metric is one row of the table.
type metric struct {
	key    string // JSON key
	label  string // table label
	unit   string // ms, MB, KB, k/s
	target *Target
}

// metrics are the per-iteration measurements, in table order.
var metrics = []metric{
	{"spawn_to_initialize_ms", "spawn → initialize", "ms", &Target{Less: true, Value: 10}},
	{"session_new_ms", "session/new", "ms", &Target{Less: true, Value: 5}},
	{"session_new_again_ms", "session/new, later session", "ms", nil},
	{"session_new_mcp_ms", "session/new, 3 MCP servers", "ms", &Target{Less: true, Value: 1}},
	{"mcp_connected_ms", "  → all 3 connected", "ms", nil},
	{"first_chunk_ms", "first agent chunk (text turn)", "ms", nil},
	{"text_turn_ms", "text turn", "ms", nil},
	{"mock_text_ms", "  of which mock LLM", "ms", nil},
	{"text_overhead_ms", "  agent overhead", "ms", &Target{Less: true, Value: 2}},
	{"before_request_ms", "    prompt → first LLM request", "ms", nil},
	{"after_stream_ms", "    last LLM byte → reply", "ms", nil},
	{"tool_turn_ms", "tool turn (create file)", "ms", nil},
	{"cancel_to_reply_ms", "cancel → reply", "ms", &Target{Less: true, Value: 5}},
	{"rss_after_session_new_mb", "RSS after session/new", "MB", &Target{Less: true, Value: 20}},
	{"anon_after_session_new_mb", "  of which anonymous", "MB", nil},
	{"rss_after_turns_mb", "RSS after the turns", "MB", nil},
	{"stdout_kb", "stdout written", "KB", nil},
}

// stressMetrics are the rows of the stress table.
var stressMetrics = []metric{
	{"chunks_per_s", "throughput", "k/s", &Target{Less: false, Value: 200_000}},
	{"turn_ms", "turn", "ms", nil},
	{"mock_ms", "  mock handler time", "ms", nil},
	{"updates", "session/update received", "", nil},
	{"agent_cpu_ms", "agent CPU time", "ms", nil},
	{"client_cpu_ms", "acpbench + mock CPU time", "ms", nil},
	{"peak_rss_mb", "peak RSS (sampled)", "MB", nil},
	{"hwm_rss_mb", "peak RSS (VmHWM)", "MB", nil},
	{"stdout_mb", "stdout written", "MB", nil},
}

// column is one agent's results for a table.
type column struct {
	name    string
	metrics map[string]Summary
}

// decimals is how many decimals a value of this magnitude is shown with.
func decimals(m metric, v float64) int {
	switch m.unit {
	case "ms":
		switch {
		case v >= 100:
			return 0
		case v >= 10:
			return 1
		}
		return 2
	case "MB", "KB", "k/s":
		return 1
	}
	return 0
}

// number renders v (k/s in thousands) with d decimals, without the unit.
func number(m metric, v float64, d int) string {
	if m.unit == "k/s" {
		return fmt.Sprintf("%.*fk", d, v/1000)
	}
	return fmt.Sprintf("%.*f", d, v)
}

// formatValue renders a value in the metric's unit.
func formatValue(m metric, v float64) string {
	n := number(m, v, decimals(m, v))
	switch m.unit {
	case "":
		return n
	case "k/s":
		return n + "/s"
	}
	return n + " " + m.unit
}

// formatSpread is the "±" part for a median of the given magnitude, with
// the median's decimals and without the unit.
func formatSpread(m metric, spread, median float64) string {
	return "±" + number(m, spread, decimals(m, median))
}

// cell renders a summary, with its ratio to base when base is non-nil.
func cell(m metric, s Summary, base *Summary) string {
	if s.N == 0 {
		return "—"
	}
	out := formatValue(m, s.Median) + " " + formatSpread(m, s.MAD, s.Median)
	if base != nil && base.N > 0 && base.Median != 0 {
		out += fmt.Sprintf(" (%s×)", ratio(s.Median/base.Median))
	}
	return out
}

func ratio(r float64) string {
	switch {
	case r >= 10:
		return fmt.Sprintf("%.0f", r)
	case r < 0.1:
		return fmt.Sprintf("%.2f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

// targetCell renders the target and whether the first column meets it.
func targetCell(m metric, first Summary) string {
	if m.target == nil {
		return ""
	}
	op := "<"
	if !m.target.Less {
		op = "≥"
	}
	v, unit := m.target.Value, " "+m.unit
	if m.unit == "k/s" {
		v, unit = v/1000, "k/s"
	}
	out := fmt.Sprintf("%s %g%s", op, v, unit)
	if first.N == 0 {
		return out
	}
	if m.target.met(first.Median) {
		return out + " ✓"
	}
	return out + " ✗"
}

// buildTable lays out rows: a header, then one row per metric with a cell
// per column (ratios to the first) and the target of the first column.
func buildTable(ms []metric, cols []column) [][]string {
	head := []string{"metric (median ± MAD)"}
	for _, c := range cols {
		head = append(head, c.name)
	}
	head = append(head, "target ("+firstName(cols)+")")
	rows := [][]string{head}
	for _, m := range ms {
		row := []string{m.label}
		var base *Summary
		for i, c := range cols {
			s := c.metrics[m.key]
			row = append(row, cell(m, s, base))
			if i == 0 {
				base = &s
			}
		}
		var first Summary
		if len(cols) > 0 {
			first = cols[0].metrics[m.key]
		}
		rows = append(rows, append(row, targetCell(m, first)))
	}
	return rows
}

func firstName(cols []column) string {
	if len(cols) == 0 {
		return ""
	}
	return cols[0].name
}

// writeText prints rows as an aligned plain-text table.
func writeText(w io.Writer, rows [][]string) {
	widths := colWidths(rows)
	for i, row := range rows {
		var sb strings.Builder
		for j, c := range row {
			if j > 0 {
				sb.WriteString("  ")
			}
			sb.WriteString(c)
			if j < len(row)-1 {
				sb.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c)))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(sb.String(), " "))
		if i == 0 {
			var rule []string
			for _, wd := range widths {
				rule = append(rule, strings.Repeat("-", wd))
			}
			fmt.Fprintln(w, strings.Join(rule, "  "))
		}
	}
}

// writeMarkdown prints rows as a Markdown table; the leading spaces that
// indent sub-rows become no-break spaces, which Markdown keeps.
func writeMarkdown(w io.Writer, rows [][]string) {
	for i, row := range rows {
		if len(row) > 0 {
			label := strings.TrimLeft(row[0], " ")
			row = append([]string{strings.Repeat("\u00a0", len(row[0])-len(label)) + label}, row[1:]...)
		}
		fmt.Fprintln(w, "| "+strings.Join(row, " | ")+" |")
		if i == 0 {
			seps := make([]string, len(row))
			for j := range seps {
				seps[j] = "---"
				if j > 0 {
					seps[j] = "---:"
				}
			}
			fmt.Fprintln(w, "| "+strings.Join(seps, " | ")+" |")
		}
	}
}

func colWidths(rows [][]string) []int {
	var widths []int
	for _, row := range rows {
		for j, c := range row {
			if j >= len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
	}
	return widths
}
