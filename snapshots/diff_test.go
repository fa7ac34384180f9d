package snapshots

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString("line" + strconv.Itoa(i) + "\n")
	}
	return b.String()
}

func TestUnifiedDiffEqual(t *testing.T) {
	require.Empty(t, UnifiedDiff("a", "b", []byte("x\ny\n"), []byte("x\ny\n")))
	require.Empty(t, UnifiedDiff("a", "b", nil, []byte{}))
}

func TestUnifiedDiffHunks(t *testing.T) {
	want := numbered(1, 20)
	got := strings.Replace(want, "line5\n", "LINE5\n", 1)
	got = strings.Replace(got, "line18\n", "", 1)
	got += "line21\n"
	require.Equal(t, `--- want
+++ got
@@ -2,7 +2,7 @@
 line2
 line3
 line4
-line5
+LINE5
 line6
 line7
 line8
@@ -15,6 +15,6 @@
 line15
 line16
 line17
-line18
 line19
 line20
+line21
`, UnifiedDiff("want", "got", []byte(want), []byte(got)))

	// Changes closer than 2×3 lines share a hunk.
	got = strings.Replace(want, "line5\n", "X\n", 1)
	got = strings.Replace(got, "line11\n", "Y\n", 1)
	require.Equal(t, `--- w
+++ g
@@ -2,13 +2,13 @@
 line2
 line3
 line4
-line5
+X
 line6
 line7
 line8
 line9
 line10
-line11
+Y
 line12
 line13
 line14
`, UnifiedDiff("w", "g", []byte(want), []byte(got)))
}

func TestUnifiedDiffEdges(t *testing.T) {
	require.Equal(t, "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n", UnifiedDiff("a", "b", nil, []byte("x\ny\n")))
	require.Equal(t, "--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n", UnifiedDiff("a", "b", []byte("x\n"), nil))
	require.Equal(t, "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+x\n\\ No newline at end of file\n",
		UnifiedDiff("a", "b", []byte("x\n"), []byte("x")))
	long := strings.Repeat("z", 5000)
	d := UnifiedDiff("a", "b", []byte(long+"\n"), []byte(long+"y\n"))
	require.Contains(t, d, "-"+long+"\n")
	require.Contains(t, d, "+"+long+"y\n")
}

// lcsLen is the textbook O(nm) longest common subsequence length.
func lcsLen(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

func TestDiffLinesIsMinimalAndCorrect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a\n", "b\n", "c\n", "d\n"}
	gen := func() []string {
		n := rng.IntN(25)
		out := make([]string, n)
		for i := range out {
			out[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return out
	}
	for range 2000 {
		a, b := gen(), gen()
		ops := diffLines(a, b)
		var gotA, gotB []string
		kept := 0
		for _, op := range ops {
			switch op.kind {
			case ' ':
				require.Equal(t, a[op.ai], b[op.bi])
				gotA, gotB = append(gotA, a[op.ai]), append(gotB, b[op.bi])
				kept++
			case '-':
				gotA = append(gotA, a[op.ai])
			case '+':
				gotB = append(gotB, b[op.bi])
			}
		}
		require.Equal(t, strings.Join(a, ""), strings.Join(gotA, ""))
		require.Equal(t, strings.Join(b, ""), strings.Join(gotB, ""))
		require.Equal(t, lcsLen(a, b), kept, "a=%q b=%q", a, b)
	}
}

func TestUnifiedDiffLargeInput(t *testing.T) {
	want := numbered(1, 20000)
	got := strings.Replace(want, "line10000\n", "changed\n", 1)
	d := UnifiedDiff("w", "g", []byte(want), []byte(got))
	require.Equal(t, "--- w\n+++ g\n@@ -9997,7 +9997,7 @@\n line9997\n line9998\n line9999\n-line10000\n+changed\n line10001\n line10002\n line10003\n", d)
	// Entirely different inputs stay tractable.
	d = UnifiedDiff("w", "g", []byte(numbered(1, 3000)), []byte(strings.ReplaceAll(numbered(1, 3000), "line", "x")))
	require.Equal(t, 3000*2+3, strings.Count(d, "\n"))
}
