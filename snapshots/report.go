package snapshots

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Main runs every scenario under paths and writes a report to w: one line
// per scenario, the diff of the first mismatch, and the closing
// "N passed, M failed" line. It reports whether all passed.
func Main(ctx context.Context, w io.Writer, paths []string, l Launcher, o Options) (bool, error) {
	var all []*Scenario
	for _, p := range paths {
		scs, err := Discover(p)
		if err != nil {
			return false, err
		}
		all = append(all, scs...)
	}
	passed, failed := 0, 0
	shownDiff := false
	for _, sc := range all {
		r := Run(ctx, sc, l, o)
		if r.Transcript != "" {
			fmt.Fprintf(w, "── %s ──%s\n", r.Name, r.Transcript)
		}
		if r.Passed {
			passed++
			fmt.Fprintf(w, "PASS %s\n", r.Name)
			continue
		}
		failed++
		fmt.Fprintf(w, "FAIL %s: %s\n", r.Name, indent(r.Message))
		if r.Diff != "" && !shownDiff {
			shownDiff = true
			fmt.Fprintln(w, indent(strings.TrimRight(r.Diff, "\n")))
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
	return failed == 0, nil
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }
