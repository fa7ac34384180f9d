package fs

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func str(s string) *string { return &s }

func TestHunks(t *testing.T) {
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString(f(i))
			b.WriteByte('\n')
		}
		return b.String()
	}
	plain := func(i int) string { return fmt.Sprintf("l%d", i) }
	change := func(at ...int) func(int) string {
		return func(i int) string {
			for _, a := range at {
				if a == i {
					return fmt.Sprintf("L%d", i)
				}
			}
			return plain(i)
		}
	}
	cases := []struct {
		name     string
		old, new string
		want     []HunkDiff
	}{
		{"contract example", "mode=DEBUG\nlevel=info\n", "mode=RELEASE\nlevel=info\n",
			[]HunkDiff{{Path: "p", OldText: str("mode=DEBUG\nlevel=info"), NewText: "mode=RELEASE\nlevel=info"}}},
		{"fs-policy-reject scenario", "color: blue\n", "color: green\n",
			[]HunkDiff{{Path: "p", OldText: str("color: blue"), NewText: "color: green"}}},
		{"plan-mode scenario", "project notes\n- the greeting message still says \"helo wrld\"\n", "project notes\nhello world\n",
			[]HunkDiff{{Path: "p", OldText: str("project notes\n- the greeting message still says \"helo wrld\""), NewText: "project notes\nhello world"}}},
		{"equal", "a\nb\n", "a\nb\n", []HunkDiff{}},
		{"both empty", "", "", []HunkDiff{}},
		{"create: no old lines", "", "a\nb", []HunkDiff{{Path: "p", OldText: nil, NewText: "a\nb"}}},
		{"delete all", "a\nb\n", "", []HunkDiff{{Path: "p", OldText: str("a\nb"), NewText: ""}}},
		{"newline at end differs", "a", "a\n", []HunkDiff{{Path: "p", OldText: str("a"), NewText: "a"}}},
		{"swap", "a\nb\n", "b\na\n", []HunkDiff{{Path: "p", OldText: str("a\nb"), NewText: "b\na"}}},
		{"context is three lines", lines(10, plain), lines(10, change(5)),
			[]HunkDiff{{Path: "p", OldText: str("l2\nl3\nl4\nl5\nl6\nl7\nl8"), NewText: "l2\nl3\nl4\nL5\nl6\nl7\nl8"}}},
		{"six equal lines join hunks", lines(20, plain), lines(20, change(5, 12)),
			[]HunkDiff{{Path: "p",
				OldText: str("l2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15"),
				NewText: "l2\nl3\nl4\nL5\nl6\nl7\nl8\nl9\nl10\nl11\nL12\nl13\nl14\nl15"}}},
		{"seven equal lines split hunks", lines(20, plain), lines(20, change(5, 13)),
			[]HunkDiff{
				{Path: "p", OldText: str("l2\nl3\nl4\nl5\nl6\nl7\nl8"), NewText: "l2\nl3\nl4\nL5\nl6\nl7\nl8"},
				{Path: "p", OldText: str("l10\nl11\nl12\nl13\nl14\nl15\nl16"), NewText: "l10\nl11\nl12\nL13\nl14\nl15\nl16"},
			}},
		{"short trailing run gets three lines", lines(8, plain), lines(8, change(2)),
			[]HunkDiff{{Path: "p", OldText: str("l1\nl2\nl3\nl4\nl5"), NewText: "l1\nL2\nl3\nl4\nl5"}}},
		{"change at the end", "a\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n",
			[]HunkDiff{{Path: "p", OldText: str("b\nc\nd\ne"), NewText: "b\nc\nd\nE"}}},
		{"pure insertion", "a\nb\n", "a\nx\nb\n", []HunkDiff{{Path: "p", OldText: str("a\nb"), NewText: "a\nx\nb"}}},
		{"insertion before everything", "a\n", "x\na\n", []HunkDiff{{Path: "p", OldText: str("a"), NewText: "x\na"}}},
		{"crlf lines differ from lf lines", "a\r\nb\r\n", "a\nb\r\n", []HunkDiff{{Path: "p", OldText: str("a\r\nb\r"), NewText: "a\nb\r"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Hunks("p", tc.old, tc.new))
		})
	}
}

func TestMetaDiffsJSON(t *testing.T) {
	require.JSONEq(t, `{"diffs":[]}`, string(metaDiffs(nil)))
	got := string(metaDiffs(Hunks("config.txt", "mode=DEBUG\nlevel=info\n", "mode=RELEASE\nlevel=info\n")))
	require.Equal(t, `{"diffs":[{"path":"config.txt","oldText":"mode=DEBUG\nlevel=info","newText":"mode=RELEASE\nlevel=info"}]}`, got)
	require.Equal(t, `{"diffs":[{"path":"a<b>","oldText":null,"newText":"x&y"}]}`, string(metaDiffs(Hunks("a<b>", "", "x&y"))))
}

// jsdiffVector is one case computed by the real jsdiff 9.0.0
// (testdata/gen_jsdiff_vectors.js).
type jsdiffVector struct {
	Old   string          `json:"old"`
	New   string          `json:"new"`
	Runs  [][2]any        `json:"runs"`
	Diffs json.RawMessage `json:"diffs"`
}

func TestHunksMatchJsdiff(t *testing.T) {
	raw, err := os.ReadFile("testdata/jsdiff_vectors.json")
	require.NoError(t, err)
	var vectors []jsdiffVector
	require.NoError(t, json.Unmarshal(raw, &vectors))
	require.Greater(t, len(vectors), 500)
	for i, v := range vectors {
		runs := diffLines(tokenize(v.Old), tokenize(v.New), diffBudget())
		got := make([][2]any, 0, len(runs))
		for _, r := range runs {
			got = append(got, [2]any{string("=-+"[r.kind]), float64(len(r.lines))})
		}
		if v.Runs == nil {
			v.Runs = [][2]any{}
		}
		require.Equal(t, v.Runs, got, "case %d runs: %q → %q", i, v.Old, v.New)
		diffs, err := json.Marshal(Hunks("f.txt", v.Old, v.New))
		require.NoError(t, err)
		require.JSONEq(t, string(v.Diffs), string(diffs), "case %d diffs: %q → %q", i, v.Old, v.New)
	}
}

func TestDiffOverBudgetFallsBack(t *testing.T) {
	old := tokenize("a\nb\nc\nd\ne\n")
	new := tokenize("a\nx\ny\nz\ne\n")
	runs := diffLines(old, new, budget{visits: 1, steps: 100})
	require.Equal(t, []run{
		{kind: runEq, lines: []string{"a\n"}},
		{kind: runDel, lines: []string{"b\n", "c\n", "d\n"}},
		{kind: runIns, lines: []string{"x\n", "y\n", "z\n"}},
		{kind: runEq, lines: []string{"e\n"}},
	}, runs)
	require.Equal(t, []HunkDiff{{Path: "p", OldText: str("a\nb\nc\nd\ne"), NewText: "a\nx\ny\nz\ne"}}, hunkDiffs("p", runs))
}

func TestTokenize(t *testing.T) {
	require.Nil(t, tokenize(""))
	require.Equal(t, []string{"a\n", "\n", "b"}, tokenize("a\n\nb"))
	require.Equal(t, []string{"a\r\n", "b\r"}, tokenize("a\r\nb\r"))
	require.Equal(t, []string{"\n"}, tokenize("\n"))
}

func TestDiffBudgetCoversARewriteOf1000Lines(t *testing.T) {
	var o, n []string
	for i := 0; i < 1000; i++ {
		o = append(o, fmt.Sprintf("old %d\n", i))
		n = append(n, fmt.Sprintf("new %d\n", i))
	}
	exact := diffLines(o, n, budget{visits: math.MaxInt, steps: math.MaxInt})
	require.Equal(t, exact, diffLines(o, n, diffBudget()))
	require.Equal(t, []run{{kind: runDel, lines: o}, {kind: runIns, lines: n}}, exact)
}
