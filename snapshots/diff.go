package snapshots

import (
	"bytes"
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines shown around each change.
const diffContext = 3

// UnifiedDiff returns a unified diff (3 lines of context, "@@" hunks) that
// turns want into got, with "--- wantName" / "+++ gotName" headers, or ""
// when both are equal. Lines are compared whole, including their "\n"; a
// final line without one is marked "\ No newline at end of file".
func UnifiedDiff(wantName, gotName string, want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	a, b := splitLines(want), splitLines(got)
	ops := diffLines(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", wantName, gotName)
	for _, h := range hunks(ops) {
		writeHunk(&out, ops[h[0]:h[1]], a, b)
	}
	return out.String()
}

// splitLines splits s into lines that keep their "\n"; only the last line
// may lack it.
func splitLines(s []byte) []string {
	var lines []string
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\n') + 1
		if i == 0 {
			i = len(s)
		}
		lines = append(lines, string(s[:i]))
		s = s[i:]
	}
	return lines
}

// diffOp is one line of an edit script: kind ' ' (kept), '-' (only in a) or
// '+' (only in b); ai and bi are the positions in a and b where it applies.
type diffOp struct {
	kind   byte
	ai, bi int
}

// diffLines computes a shortest edit script from a to b (Myers' algorithm,
// linear-space divide and conquer on the middle snake).
func diffLines(a, b []string) []diffOp {
	ids := map[string]int{}
	intern := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	d := &differ{a: intern(a), b: intern(b)}
	d.diff(0, len(a), 0, len(b))
	return d.ops
}

type differ struct {
	a, b []int
	ops  []diffOp
}

func (d *differ) emit(kind byte, ai, bi int) {
	d.ops = append(d.ops, diffOp{kind: kind, ai: ai, bi: bi})
}

// diff appends the edit script of a[a0:a1] → b[b0:b1].
func (d *differ) diff(a0, a1, b0, b1 int) {
	for a0 < a1 && b0 < b1 && d.a[a0] == d.b[b0] {
		d.emit(' ', a0, b0)
		a0, b0 = a0+1, b0+1
	}
	suffix := 0
	for a1-suffix > a0 && b1-suffix > b0 && d.a[a1-1-suffix] == d.b[b1-1-suffix] {
		suffix++
	}
	a1, b1 = a1-suffix, b1-suffix
	x, y, ok := d.bisect(a0, a1, b0, b1)
	switch {
	case a0 == a1 || b0 == b1 || !ok:
		for i := a0; i < a1; i++ {
			d.emit('-', i, b0)
		}
		for j := b0; j < b1; j++ {
			d.emit('+', a1, j)
		}
	default:
		d.diff(a0, x, b0, y)
		d.diff(x, a1, y, b1)
	}
	for i := range suffix {
		d.emit(' ', a1+i, b1+i)
	}
}

// bisect finds the middle snake of a[a0:a1] → b[b0:b1] and returns a split
// point strictly inside both ranges' edit graph, or ok=false when the
// ranges share nothing worth splitting on.
func (d *differ) bisect(a0, a1, b0, b1 int) (x, y int, ok bool) {
	n, m := a1-a0, b1-b0
	if n == 0 || m == 0 {
		return 0, 0, false
	}
	maxD := (n + m + 1) / 2
	off := maxD
	size := 2*maxD + 2
	v1, v2 := make([]int, size), make([]int, size)
	for i := range v1 {
		v1[i], v2[i] = -1, -1
	}
	v1[off+1], v2[off+1] = 0, 0
	delta := n - m
	front := delta%2 != 0
	k1start, k1end, k2start, k2end := 0, 0, 0, 0
	split := func(x, y int) (int, int, bool) {
		if (x == 0 && y == 0) || (x == n && y == m) {
			return 0, 0, false
		}
		return a0 + x, b0 + y, true
	}
	for dd := 0; dd < maxD; dd++ {
		for k1 := -dd + k1start; k1 <= dd-k1end; k1 += 2 {
			k1Off := off + k1
			var x1 int
			if k1 == -dd || (k1 != dd && v1[k1Off-1] < v1[k1Off+1]) {
				x1 = v1[k1Off+1]
			} else {
				x1 = v1[k1Off-1] + 1
			}
			y1 := x1 - k1
			for x1 < n && y1 < m && d.a[a0+x1] == d.b[b0+y1] {
				x1, y1 = x1+1, y1+1
			}
			v1[k1Off] = x1
			switch {
			case x1 > n:
				k1end += 2
			case y1 > m:
				k1start += 2
			case front:
				k2Off := off + delta - k1
				if k2Off >= 0 && k2Off < size && v2[k2Off] != -1 && x1 >= n-v2[k2Off] {
					return split(x1, y1)
				}
			}
		}
		for k2 := -dd + k2start; k2 <= dd-k2end; k2 += 2 {
			k2Off := off + k2
			var x2 int
			if k2 == -dd || (k2 != dd && v2[k2Off-1] < v2[k2Off+1]) {
				x2 = v2[k2Off+1]
			} else {
				x2 = v2[k2Off-1] + 1
			}
			y2 := x2 - k2
			for x2 < n && y2 < m && d.a[a1-1-x2] == d.b[b1-1-y2] {
				x2, y2 = x2+1, y2+1
			}
			v2[k2Off] = x2
			switch {
			case x2 > n:
				k2end += 2
			case y2 > m:
				k2start += 2
			case !front:
				k1Off := off + delta - k2
				if k1Off >= 0 && k1Off < size && v1[k1Off] != -1 {
					x1 := v1[k1Off]
					y1 := off + x1 - k1Off
					if x1 >= n-x2 {
						return split(x1, y1)
					}
				}
			}
		}
	}
	return 0, 0, false
}

// hunks groups ops into [start, end) ranges: each change with up to
// diffContext kept lines around it, merging changes whose gap is small.
func hunks(ops []diffOp) [][2]int {
	var out [][2]int
	for i := 0; i < len(ops); {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(i-diffContext, 0)
		end := i
		for {
			for end < len(ops) && ops[end].kind != ' ' {
				end++
			}
			j := end
			for j < len(ops) && ops[j].kind == ' ' {
				j++
			}
			if j < len(ops) && j-end <= 2*diffContext {
				end = j
				continue
			}
			end = min(end+diffContext, len(ops))
			break
		}
		out = append(out, [2]int{start, end})
		i = end
	}
	return out
}

// hunkRange formats one side of a hunk header the way GNU diff does.
func hunkRange(first, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", first)
	case 1:
		return fmt.Sprintf("%d", first+1)
	default:
		return fmt.Sprintf("%d,%d", first+1, count)
	}
}

func writeHunk(out *strings.Builder, ops []diffOp, a, b []string) {
	aCount, bCount := 0, 0
	for _, op := range ops {
		if op.kind != '+' {
			aCount++
		}
		if op.kind != '-' {
			bCount++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(ops[0].ai, aCount), hunkRange(ops[0].bi, bCount))
	for _, op := range ops {
		var line string
		if op.kind == '+' {
			line = b[op.bi]
		} else {
			line = a[op.ai]
		}
		out.WriteByte(op.kind)
		out.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}
