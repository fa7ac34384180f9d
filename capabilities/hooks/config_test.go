package hooks

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/sandbox"
)

// TestMain lets the test binary serve as the Landlock launcher.
func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	os.Exit(m.Run())
}

func TestParseReadsSettingsOrBareMaps(t *testing.T) {
	settings := `{"permissions":{},"hooks":{"PreToolUse":[{"matcher":"Bash|bash","hooks":[{"type":"command","command":"a","timeout":5}]}]}}`
	c, err := Parse(Claude, []byte(settings), ParseOptions{})
	require.NoError(t, err)
	require.Len(t, c.Points[PreToolUse], 1)
	g := c.Points[PreToolUse][0]
	require.Equal(t, "Bash|bash", *g.Matcher)
	require.Equal(t, []Command{{Command: "a", Timeout: 5 * time.Second}}, g.Hooks)

	bare := `{"Stop":[{"hooks":[{"command":"b"}]}],"Whatever":[{"hooks":[{"command":"c"}]}]}`
	c, err = Parse(Claude, []byte(bare), ParseOptions{})
	require.NoError(t, err)
	require.Len(t, c.Points, 2, "Claude reads every key as an event name")
	require.Nil(t, c.Points[Stop][0].Matcher)

	c, err = Parse(Codex, []byte(bare), ParseOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{Stop}, keys(c.Points), "Codex reads only its five events")
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestParseSkipsWhatCannotRun(t *testing.T) {
	cfg := `{"hooks":{
	  "PreToolUse":[
	    {"matcher":"bash","hooks":[{"type":"prompt","prompt":"x"},{"command":42},"junk",{"command":"ok","timeoutSec":3}]},
	    {"matcher":"read","hooks":[]},
	    {"matcher":"write"},
	    "not a group"
	  ],
	  "PostToolUse":[{"hooks":[{"command":"later","async":true},{"command":"now","timeoutSec":2,"timeout":7}]}],
	  "Stop":"not an array"}}`
	c, err := Parse(Codex, []byte(cfg), ParseOptions{})
	require.NoError(t, err)
	require.Equal(t, []Command{{Command: "ok", Timeout: 3 * time.Second}}, c.Points[PreToolUse][0].Hooks, "Codex also reads timeoutSec")
	require.Len(t, c.Points[PreToolUse], 1, "groups with no runnable hook are dropped")
	require.Equal(t, []Command{{Command: "now", Timeout: 7 * time.Second}}, c.Points[PostToolUse][0].Hooks, "async Codex hooks are skipped")
	require.NotContains(t, c.Points, Stop)
	require.Len(t, c.Skipped, 2)

	c, err = Parse(Claude, []byte(`{"PreToolUse":[{"hooks":[{"command":"x","timeoutSec":3}]}]}`), ParseOptions{})
	require.NoError(t, err)
	require.Zero(t, c.Points[PreToolUse][0].Hooks[0].Timeout, "Claude reads timeout only")
}

func TestParseRejectsInvalidJSON(t *testing.T) {
	_, err := Parse(Claude, []byte(`{"hooks":`), ParseOptions{Source: "x.json"})
	require.ErrorContains(t, err, "x.json")
	_, err = Parse(Claude, []byte(`[1,2]`), ParseOptions{})
	require.Error(t, err)
	_, err = Load(Claude, filepath.Join(t.TempDir(), "absent.json"), ParseOptions{})
	require.True(t, IsMissing(err))
}

func TestMatchers(t *testing.T) {
	group := func(d Dialect, m *string) *Group {
		g := &Group{Matcher: m, Hooks: []Command{{Command: "x"}}}
		_ = g.compile(d)
		return g
	}
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		d       Dialect
		matcher *string
		query   string
		want    bool
	}{
		{Claude, nil, "bash", true},
		{Claude, s(""), "bash", true},
		{Claude, s("*"), "", true},
		{Claude, s("bash"), "bash", true},
		{Claude, s("bash"), "bash_x", false},         // literal: exact
		{Claude, s("Edit|Write|bash"), "bash", true}, // alternatives
		{Claude, s("Edit|Write"), "", false},
		{Claude, s("ba.h"), "xbashx", true}, // regex, unanchored
		{Claude, s("^read$"), "read", true},
		{Claude, s("^read$"), "reader", false},
		{Claude, s("(unclosed"), "(unclosed", false}, // invalid regex never matches
		{Codex, s("bash"), "bash_x", true},           // Codex: a regex, unanchored
		{Codex, s("^bash$"), "bash", true},
		{Codex, s("Edit|bash"), "bash", true},
	} {
		require.Equal(t, tc.want, group(tc.d, tc.matcher).Matches(tc.query), "%s %v %q", tc.d, tc.matcher, tc.query)
	}
}

func TestStrictParseRejectsTheWholeConfigOnAnInvalidMatcher(t *testing.T) {
	cfg := `{"hooks":{"PreToolUse":[{"matcher":"bash","hooks":[{"command":"fine"}]},{"matcher":"(broken","hooks":[{"command":"x"}]}]}}`
	c, err := Parse(Claude, []byte(cfg), ParseOptions{})
	require.NoError(t, err, "upstream keeps it: the broken group never matches")
	require.Len(t, c.Points[PreToolUse], 2)
	_, err = Parse(Claude, []byte(cfg), ParseOptions{Strict: true, Source: "settings.json"})
	require.ErrorContains(t, err, `settings.json: matcher "(broken" on PreToolUse: invalid regular expression`)
}
