package fs

import (
	"math"
	"strings"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
)

// This file ports upstream's computeHunkDiffs over jsdiff 9.0.0
// structuredPatch(…, {context: 3}) (tools contract § 8). The line diff is a
// literal port of jsdiff's diff/base.js so that ambiguous inputs resolve the
// same way.

// hunkContext is the number of unchanged lines around a change.
const hunkContext = 3

// budget limits the work of one line diff so that a pathological input
// (thousands of scattered changes in a large file) cannot stall a write or
// edit or exhaust memory: past it the diff degrades to one change between
// the common prefix and suffix. jsdiff itself has no bound; within the
// budget the result is exact.
type budget struct {
	// visits are diagonal visits; each keeps at most two 12-byte
	// components alive until the diff ends.
	visits int
	// steps are token comparisons along diagonals.
	steps int
}

// diffBudget allows, for example, an exact diff of two 1000-line texts
// with no line in common (about 1M visits, at most 24 MB of components) or
// of a 10,000-line file with a few hundred scattered changes. For a
// complete rewrite the fallback is what jsdiff produces anyway.
func diffBudget() budget { return budget{visits: 1_000_000, steps: 50_000_000} }

// HunkDiff is one hunk of a file change as it appears in `meta.diffs`.
type HunkDiff struct {
	Path    string  `json:"path"`
	OldText *string `json:"oldText"`
	NewText string  `json:"newText"`
}

// runKind is the kind of a diff run.
type runKind uint8

const (
	runEq runKind = iota
	runDel
	runIns
)

// run is a maximal block of lines of one kind.
type run struct {
	kind  runKind
	lines []string
}

// Hunks returns the hunks between oldText and newText, labelled with path:
// one per region of change with up to three lines of context, in file
// order; none when the texts are equal.
func Hunks(path, oldText, newText string) []HunkDiff {
	if oldText == newText {
		return []HunkDiff{}
	}
	runs := diffLines(tokenize(oldText), tokenize(newText), diffBudget())
	return hunkDiffs(path, runs)
}

// metaDiffs renders {"diffs":[…]}.
func metaDiffs(diffs []HunkDiff) []byte {
	if diffs == nil {
		diffs = []HunkDiff{}
	}
	return jsonx.MustMarshal(struct {
		Diffs []HunkDiff `json:"diffs"`
	}{diffs})
}

// tokenize splits s into lines, each keeping its "\n" (a "\r\n" ends with
// "\n" too); a final segment without one is its own line; "" has none.
func tokenize(s string) []string {
	if s == "" {
		return nil
	}
	lines := make([]string, 0, strings.Count(s, "\n")+1)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// component is one node of jsdiff's persistent path list: a run of count
// tokens of one kind, linked to the component before it. Components live in
// an arena and link by index (-1: none).
type component struct {
	kind  runKind
	count int32
	prev  int32
}

// dpath is jsdiff's path: the furthest old position reached on a diagonal
// and its last component.
type dpath struct {
	oldPos int
	last   int32
	ok     bool
}

// differ holds one diff's state.
type differ struct {
	old, new []string
	arena    []component
	left     budget
}

// addToPath extends p by one token of kind (jsdiff addToPath): a run of the
// same kind grows by one, as a new component that replaces the last.
func (d *differ) addToPath(p dpath, kind runKind, oldInc int) dpath {
	last := p.last
	if last >= 0 && d.arena[last].kind == kind {
		c := d.arena[last]
		d.arena = append(d.arena, component{kind: kind, count: c.count + 1, prev: c.prev})
	} else {
		d.arena = append(d.arena, component{kind: kind, count: 1, prev: last})
	}
	return dpath{oldPos: p.oldPos + oldInc, last: int32(len(d.arena) - 1), ok: true}
}

// extractCommon follows the diagonal k from p while tokens match (jsdiff
// extractCommon) and returns the new position.
func (d *differ) extractCommon(p *dpath, k int) int {
	oldPos := p.oldPos
	newPos := oldPos - k
	common := 0
	for newPos+1 < len(d.new) && oldPos+1 < len(d.old) && d.old[oldPos+1] == d.new[newPos+1] {
		newPos++
		oldPos++
		common++
	}
	d.left.steps -= common
	if common > 0 {
		d.arena = append(d.arena, component{kind: runEq, count: int32(common), prev: p.last})
		p.last = int32(len(d.arena) - 1)
	}
	p.oldPos = oldPos
	return newPos
}

// diffLines diffs two token lists exactly as jsdiff's base diff does, and
// returns the runs in order. Past budget it falls back to coarseRuns.
func diffLines(old, new []string, limit budget) []run {
	m, n := len(old), len(new)
	if m+n >= math.MaxInt32 {
		return coarseRuns(old, new)
	}
	d := &differ{old: old, new: new, left: limit}
	var best diagonals
	start := best.at(0)
	*start = dpath{oldPos: -1, last: -1, ok: true}
	newPos := d.extractCommon(start, 0)
	if start.oldPos+1 >= m && newPos+1 >= n {
		return d.materialize(start.last)
	}
	const inf = int(^uint(0) >> 1)
	minK, maxK := -inf, inf
	for editLength := 1; editLength <= m+n; editLength++ {
		for k := max(minK, -editLength); k <= min(maxK, editLength); k += 2 {
			d.left.visits--
			if d.left.visits < 0 || d.left.steps < 0 {
				return coarseRuns(old, new)
			}
			remove, add := *best.at(k - 1), *best.at(k + 1)
			if remove.ok {
				*best.at(k - 1) = dpath{}
			}
			canAdd := false
			if add.ok {
				addNewPos := add.oldPos - k
				canAdd = 0 <= addNewPos && addNewPos < n
			}
			canRemove := remove.ok && remove.oldPos+1 < m
			if !canAdd && !canRemove {
				*best.at(k) = dpath{}
				continue
			}
			var base dpath
			if !canRemove || (canAdd && remove.oldPos < add.oldPos) {
				base = d.addToPath(add, runIns, 0)
			} else {
				base = d.addToPath(remove, runDel, 1)
			}
			newPos = d.extractCommon(&base, k)
			if base.oldPos+1 >= m && newPos+1 >= n {
				return d.materialize(base.last)
			}
			*best.at(k) = base
			if base.oldPos+1 >= m {
				maxK = min(maxK, k-1)
			}
			if newPos+1 >= n {
				minK = max(minK, k+1)
			}
		}
	}
	// Unreachable: an edit script of length m+n always exists.
	return coarseRuns(old, new)
}

// diagonals is jsdiff's bestPath: one path slot per diagonal k, grown on
// demand (|k| never exceeds the edit length plus one).
type diagonals struct {
	pos []dpath // k >= 0
	neg []dpath // k < 0, at index -k-1
}

// at returns the slot of diagonal k.
func (d *diagonals) at(k int) *dpath {
	s, i := &d.pos, k
	if k < 0 {
		s, i = &d.neg, -k-1
	}
	for len(*s) <= i {
		*s = append(*s, dpath{})
	}
	return &(*s)[i]
}

// materialize turns the component list ending at last into runs: eq and
// ins lines come from new, del lines from old.
func (d *differ) materialize(last int32) []run {
	var comps []component
	for i := last; i >= 0; i = d.arena[i].prev {
		comps = append(comps, d.arena[i])
	}
	runs := make([]run, 0, len(comps))
	oldPos, newPos := 0, 0
	for i := len(comps) - 1; i >= 0; i-- {
		c := comps[i]
		count := int(c.count)
		switch c.kind {
		case runDel:
			runs = append(runs, run{kind: runDel, lines: d.old[oldPos : oldPos+count]})
			oldPos += count
		case runIns:
			runs = append(runs, run{kind: runIns, lines: d.new[newPos : newPos+count]})
			newPos += count
		default:
			runs = append(runs, run{kind: runEq, lines: d.new[newPos : newPos+count]})
			newPos += count
			oldPos += count
		}
	}
	return runs
}

// coarseRuns is the over-budget fallback: the common prefix and suffix
// unchanged, everything between them removed and inserted.
func coarseRuns(old, new []string) []run {
	p := 0
	for p < len(old) && p < len(new) && old[p] == new[p] {
		p++
	}
	s := 0
	for s < len(old)-p && s < len(new)-p && old[len(old)-1-s] == new[len(new)-1-s] {
		s++
	}
	var runs []run
	if p > 0 {
		runs = append(runs, run{kind: runEq, lines: new[:p]})
	}
	if del := old[p : len(old)-s]; len(del) > 0 {
		runs = append(runs, run{kind: runDel, lines: del})
	}
	if ins := new[p : len(new)-s]; len(ins) > 0 {
		runs = append(runs, run{kind: runIns, lines: ins})
	}
	if s > 0 {
		runs = append(runs, run{kind: runEq, lines: new[len(new)-s:]})
	}
	return runs
}

// hunkLine is one line of a hunk: ' ' context, '-' removed, '+' added.
type hunkLine struct {
	op   byte
	text string
}

// buildHunks groups runs into hunks like jsdiff's structuredPatch with
// context 3: a final empty eq run is the sentinel that closes the last hunk.
func buildHunks(runs []run) [][]hunkLine {
	all := append(runs[:len(runs):len(runs)], run{kind: runEq})
	var hunks [][]hunkLine
	var cur []hunkLine
	open := false
	for i, r := range all {
		if r.kind != runEq {
			if !open {
				open = true
				if i > 0 {
					prev := all[i-1].lines
					for _, l := range prev[max(0, len(prev)-hunkContext):] {
						cur = append(cur, hunkLine{' ', l})
					}
				}
			}
			op := byte('-')
			if r.kind == runIns {
				op = '+'
			}
			for _, l := range r.lines {
				cur = append(cur, hunkLine{op, l})
			}
			continue
		}
		if !open {
			continue
		}
		if len(r.lines) <= 2*hunkContext && i < len(all)-2 {
			for _, l := range r.lines {
				cur = append(cur, hunkLine{' ', l})
			}
			continue
		}
		for _, l := range r.lines[:min(len(r.lines), hunkContext)] {
			cur = append(cur, hunkLine{' ', l})
		}
		hunks = append(hunks, cur)
		cur, open = nil, false
	}
	return hunks
}

// hunkDiffs turns runs into meta.diffs entries: the old side is context
// plus removed lines, the new side context plus added lines, each line
// without its trailing "\n".
func hunkDiffs(path string, runs []run) []HunkDiff {
	hunks := buildHunks(runs)
	out := make([]HunkDiff, 0, len(hunks))
	var oldLines, newLines []string
	for _, h := range hunks {
		oldLines, newLines = oldLines[:0], newLines[:0]
		for _, l := range h {
			text := strings.TrimSuffix(l.text, "\n")
			if l.op != '+' {
				oldLines = append(oldLines, text)
			}
			if l.op != '-' {
				newLines = append(newLines, text)
			}
		}
		d := HunkDiff{Path: path, NewText: strings.Join(newLines, "\n")}
		if len(oldLines) > 0 {
			s := strings.Join(oldLines, "\n")
			d.OldText = &s
		}
		out = append(out, d)
	}
	return out
}
