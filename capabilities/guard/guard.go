// Package guard is the repeat-tool guard (subagents-workflows contract
// § 6): a turn-pipeline member that notices the model calling the same
// tool with the same arguments again and again, and tells it to stop.
package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"

	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// DefaultThresholds are the repeat counts that remind the model.
var DefaultThresholds = []int{3, 5, 8}

// Plugin is the source plugin of the guard's context messages.
const Plugin = "repeat-tool-guard"

// Gentle is the reminder at the first threshold.
const Gentle = "You are repeating the exact same tool call with identical arguments. Carefully analyze the previous result " +
	"before calling again: if the task is not complete, try a different approach or different arguments instead of repeating the call."

// previewChars caps the arguments quoted in the detailed reminder (UTF-16
// units, as upstream counts).
const previewChars = 500

// Guard counts one session's consecutive identical calls. Counting happens
// in the post-execute chain, so denied and failed calls count too; a
// prompt resets it. Make one per session.
type Guard struct {
	thresholds []int

	mu    sync.Mutex
	last  string
	count int
}

// New returns a guard reminding at thresholds (nil: DefaultThresholds),
// the first one gently, the later ones in detail.
func New(thresholds []int) *Guard {
	if thresholds == nil {
		thresholds = DefaultThresholds
	}
	t := append([]int(nil), thresholds...)
	sort.Ints(t)
	return &Guard{thresholds: t}
}

// Name implements pipeline.Namer.
func (*Guard) Name() string { return Plugin }

// SubmitPrompt implements pipeline.PromptSubmitter: a prompt resets the
// count.
func (g *Guard) SubmitPrompt(context.Context, pipeline.Conversation, pipeline.Prompt) (pipeline.PromptDecision, error) {
	g.mu.Lock()
	g.last, g.count = "", 0
	g.mu.Unlock()
	return pipeline.PromptDecision{}, nil
}

// ReviewResult implements pipeline.ResultReviewer: it counts the call and,
// at a threshold, adds its reminder as the call's context.
func (g *Guard) ReviewResult(_ context.Context, _ pipeline.Conversation, c pipeline.Call, _ pipeline.Result) (pipeline.ResultDecision, error) {
	canonical := Canonical(c.Args)
	key := string(append(jsonx.AppendString(append(jsonx.AppendString([]byte{'['}, c.Name), ','), canonical), ']'))
	g.mu.Lock()
	if key == g.last {
		g.count++
	} else {
		g.last, g.count = key, 1
	}
	n := g.count
	g.mu.Unlock()
	text := g.reminder(c.Name, n, canonical)
	if text == "" {
		return pipeline.ResultDecision{}, nil
	}
	return pipeline.ResultDecision{Context: &pipeline.Context{
		Source:  session.PluginSource(Plugin),
		Content: []session.Block{session.TextBlock(text)},
	}}, nil
}

// reminder is the text for the n-th identical call ("" below or between
// thresholds, and past the last).
func (g *Guard) reminder(name string, n int, canonical string) string {
	for i, t := range g.thresholds {
		if t != n {
			continue
		}
		if i == 0 {
			return Gentle
		}
		return "Repeated tool call detected:\n- tool: " + name + "\n- consecutive_calls: " + strconv.Itoa(n) +
			"\n- arguments: " + preview(canonical) + "\nThe repeated calls are not making progress. Do not call this tool with " +
			"these exact arguments again. Inspect the latest result and choose a different action, different arguments, " +
			"or finish the task if enough evidence has been gathered."
	}
	return ""
}

// preview cuts canonical arguments to previewChars UTF-16 units and says
// how many were left out.
func preview(s string) string {
	u := utf16.Encode([]rune(s))
	if len(u) <= previewChars {
		return s
	}
	return string(utf16.Decode(u[:previewChars])) + fmt.Sprintf("… (+%d more chars)", len(u)-previewChars)
}

// Canonical is JavaScript's JSON.stringify of the parsed arguments with
// object keys sorted recursively (arrays keep their order). Arguments that
// are not JSON are canonical as they are.
func Canonical(args json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(args)
	}
	return string(appendJS(nil, v))
}

// appendJS appends v as JSON.stringify writes the sorted value.
func appendJS(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return append(b, "null"...)
		}
		return append(b, jsNumber(f)...)
	case string:
		return jsonx.AppendString(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJS(b, e)
		}
		return append(b, ']')
	case map[string]any:
		b = append(b, '{')
		for i, k := range jsKeyOrder(x) {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonx.AppendString(b, k)
			b = append(b, ':')
			b = appendJS(b, x[k])
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}

// jsKeyOrder is the iteration order of an object built by inserting the
// keys sorted (by UTF-16 code units): array-index keys first, ascending
// numerically, then the others in insertion order.
func jsKeyOrder(m map[string]any) []string {
	var idx []uint64
	byIdx := map[uint64]string{}
	var rest []string
	for k := range m {
		if n, ok := arrayIndex(k); ok {
			idx = append(idx, n)
			byIdx[n] = k
			continue
		}
		rest = append(rest, k)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	sort.Slice(rest, func(i, j int) bool { return lessUTF16(rest[i], rest[j]) })
	out := make([]string, 0, len(m))
	for _, n := range idx {
		out = append(out, byIdx[n])
	}
	return append(out, rest...)
}

// arrayIndex reports whether k is a canonical array index (0 … 2³²−2).
func arrayIndex(k string) (uint64, bool) {
	if k == "" || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	if err != nil || n >= math.MaxUint32 {
		return 0, false
	}
	return n, true
}

// lessUTF16 compares strings by UTF-16 code units, as Array.prototype.sort.
func lessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

// jsNumber formats f as JavaScript's Number#toString.
func jsNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if a := math.Abs(f); a >= 1e21 || a < 1e-6 {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[0]
		exp = strings.TrimLeft(exp[1:], "0")
		return mant + "e" + string(sign) + exp
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
