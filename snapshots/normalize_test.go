package snapshots

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/shared"
	"github.com/stretchr/testify/require"
)

// upstreamRoot locates the shared upstream corpus (internal/shared). When
// it is absent it skips the test if skip is set, else it returns "".
func upstreamRoot(t *testing.T, skip bool) string {
	t.Helper()
	if skip {
		return shared.Dir(t, shared.Upstream)
	}
	root, err := shared.Lookup(shared.Upstream)
	if err != nil {
		return ""
	}
	return root
}

// upstreamScenarios returns every scenario directory of the corpus.
func upstreamScenarios(t *testing.T) []string {
	t.Helper()
	root := upstreamRoot(t, true)
	dirs, err := filepath.Glob(filepath.Join(root, "*", "*", "stdout.golden.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs, "no scenarios under %s", root)
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

const testUUID = "539aa64c-7f37-40ff-abd8-ed45b717be1b"

func TestScrubString(t *testing.T) {
	t.Parallel()
	cwd := "/tmp/acp-snap-cwd-" + testUUID
	ids := []string{"sess-1", "", "9F3A"}
	cases := []struct{ in, want string }{
		{cwd + "/a.txt", "{{cwd}}/a.txt"},                                // cwd before the UUID rule
		{"cd " + cwd + " && cd " + cwd, "cd {{cwd}} && cd {{cwd}}"},      // every occurrence
		{"id sess-1 and sess-10", "id {{sessionId}} and {{sessionId}}0"}, // plain substring
		{"upper " + strings.ToUpper(testUUID), "upper {{sessionId}}"},    // case-insensitive
		{"x" + testUUID + "0", "x{{sessionId}}0"},                        // unanchored
		{"not-a-uuid 539aa64c-7f37-40ff-abd8-ed45b717be1", "not-a-uuid 539aa64c-7f37-40ff-abd8-ed45b717be1"},
		{"", ""},
	}
	for _, c := range cases {
		require.Equal(t, c.want, ScrubString(c.in, cwd, ids), "input %q", c.in)
	}
	require.Equal(t, "/x/y", ScrubString("/x/y", "", nil), "empty cwd is skipped")
	// A known id is scrubbed before the cwd would have matched it? No: cwd first.
	require.Equal(t, "{{cwd}}", ScrubString("/w/sess-1", "/w/sess-1", []string{"sess-1"}))
	require.Equal(t, "/w/{{sessionId}}", ScrubString("/w/sess-1", "/other", []string{"sess-1"}))
}

func TestScrubLeavesKeys(t *testing.T) {
	t.Parallel()
	v, err := ParseJS([]byte(`{"` + testUUID + `":"` + testUUID + `","n":[1,"/c/x"]}`))
	require.NoError(t, err)
	Scrub(v, "/c", nil)
	require.Equal(t, `{"`+testUUID+`":"{{sessionId}}","n":[1,"{{cwd}}/x"]}`, v.String())
}

func TestNormalizeStdoutRenumbers(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"x"},"authMethods":[],"agentCapabilities":{"loadSession":true}}}`,
		``,
		`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess-A"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-A","cwd":"/tmp/c/x"}}`,
		`   `,
		`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}`,
		`{"jsonrpc":"2.0","id":"0","result":null}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}` + "\r",
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`[1,2]`,
		``,
	}, "\n")
	got, err := NormalizeStdout([]byte(in), "/tmp/c", []string{"sess-A"})
	require.NoError(t, err)
	want := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":"{{agent}}","authMethods":[],"agentCapabilities":"{{agent}}"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"{{sessionId}}"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"{{sessionId}}","cwd":"{{cwd}}/x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"result":null}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`[1,2]`,
	}, "\n") + "\n"
	require.Equal(t, want, string(got))

	again, err := NormalizeStdout(got, "/tmp/c", []string{"sess-A"})
	require.NoError(t, err)
	require.Equal(t, string(got), string(again), "idempotent")

	empty, err := NormalizeStdout([]byte("\n\n"), "", nil)
	require.NoError(t, err)
	require.Empty(t, empty)
}

func TestNormalizeStdoutPurity(t *testing.T) {
	t.Parallel()
	_, err := NormalizeStdout([]byte("{\"id\":0,\"result\":{}}\nhello world\n"), "", nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), "stdout line 2")
	require.Contains(t, err.Error(), "hello world")
}

func TestNormalizeLog(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"type":"session","version":0,"id":"sess-A","createdAt":1783600629539,"cwd":"/tmp/c"}`,
		`{"type":"turn/start","seq":0,"time":1783600629541,"data":{"turn":1,"path":"/tmp/c/f","call":"` + testUUID + `"}}`,
		`{"type":"hook/result","seq":1,"time":17,"data":{"point":"Stop","durationMs":9.49630100000013}}`,
		`{"type":"hook/result","seq":2,"time":18,"data":{"point":"Stop"}}`,
		`{"type":"request/header","seq":3,"time":19,"data":{"header":{"config":{"model":"m"},"system":"You are in /tmp/c","tools":[{"name":"bash"}],"messagePrefix":[{"role":"user"},"x"]},"reason":"initial"}}`,
		`{"type":"request/header","seq":4,"time":20,"data":{"header":{"config":{"model":"m"}},"reason":"fallback"}}`,
		`{"type":"request/header-delta","seq":5,"time":21,"data":{"system":{"keepStart":11,"keepEnd":0,"insert":["","a"]},"tools":{"added":[{"name":"edit","description":"d","parameters":{"type":"object"}}],"removed":["exit_plan_mode"],"changed":[{"description":"e","name":"bash"}]},"config":{"model":"n"},"messagePrefix":["p","q"]}}`,
		``,
	}, "\n")
	want := strings.Join([]string{
		`{"type":"session","version":0,"id":"{{sessionId}}","createdAt":0,"cwd":"{{cwd}}"}`,
		`{"type":"turn/start","seq":0,"time":0,"data":{"turn":1,"path":"{{cwd}}/f","call":"{{sessionId}}"}}`,
		`{"type":"hook/result","seq":1,"time":0,"data":{"point":"Stop","durationMs":0}}`,
		`{"type":"hook/result","seq":2,"time":0,"data":{"point":"Stop"}}`,
		`{"type":"request/header","seq":3,"time":0,"data":{"header":{"config":{"model":"m"},"system":"{{system}}","tools":"{{tools}}","messagePrefix":["{{messagePrefix}}","{{messagePrefix}}"]},"reason":"initial"}}`,
		`{"type":"request/header","seq":4,"time":0,"data":{"header":{"config":{"model":"m"}},"reason":"fallback"}}`,
		`{"type":"request/header-delta","seq":5,"time":0,"data":{"system":"{{system}}","tools":{"added":[{"name":"edit","description":"{{tools}}","parameters":"{{tools}}"}],"removed":["exit_plan_mode"],"changed":[{"description":"{{tools}}","name":"bash"}]},"config":{"model":"n"},"messagePrefix":["{{messagePrefix}}","{{messagePrefix}}"]}}`,
	}, "\n") + "\n"
	id, cwd := LogIdentity([]byte(in))
	require.Equal(t, "sess-A", id)
	require.Equal(t, "/tmp/c", cwd)

	got, err := NormalizeLog([]byte(in), cwd, []string{id}, true)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
	again, err := NormalizeLog(got, cwd, []string{id}, true)
	require.NoError(t, err)
	require.Equal(t, want, string(again), "idempotent")

	// Without the header scrub, header content stays (scrubbed only).
	plain, err := NormalizeLog([]byte(in), cwd, []string{id}, false)
	require.NoError(t, err)
	require.Contains(t, string(plain), `"system":"You are in {{cwd}}"`)
	require.Contains(t, string(plain), `"insert":["","a"]`)

	_, err = NormalizeLog([]byte("{\"type\":\"session\"}\n{oops\n"), "", nil, false)
	require.ErrorContains(t, err, "session log line 2")
	_, err = NormalizeLog([]byte("[1]\n"), "", nil, false)
	require.Error(t, err)
}

func TestLogIdentity(t *testing.T) {
	t.Parallel()
	id, cwd := LogIdentity([]byte("\n{\"type\":\"session\",\"version\":0,\"id\":\"00000000-0000-0000-0000-000000000000\",\"createdAt\":0}\n"))
	require.Equal(t, "00000000-0000-0000-0000-000000000000", id)
	require.Empty(t, cwd)
	id, cwd = LogIdentity([]byte(`{"type":"turn/start"}`))
	require.Empty(t, id)
	require.Empty(t, cwd)
	id, _ = LogIdentity([]byte("not json"))
	require.Empty(t, id)
}

// TestUpstreamGoldensAreFixedPoints checks that normalizing each golden
// stdout only introduces the {{agent}} token, and that normalizing each
// session log (with its own identity and the header scrub) is stable.
func TestUpstreamGoldensAreFixedPoints(t *testing.T) {
	t.Parallel()
	for _, dir := range upstreamScenarios(t) {
		name, _ := filepath.Rel(filepath.Join(dir, "..", ".."), dir)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			logs, err := filepath.Glob(filepath.Join(dir, "session*.jsonl"))
			require.NoError(t, err)
			var ids []string
			var cwd string
			for _, l := range logs {
				data, err := os.ReadFile(l)
				require.NoError(t, err)
				id, c := LogIdentity(data)
				require.NotEmpty(t, id, "%s has no header id", l)
				ids = append(ids, id)
				if filepath.Base(l) == "session.jsonl" {
					cwd = c
				}
			}

			golden, err := os.ReadFile(filepath.Join(dir, "stdout.golden.jsonl"))
			require.NoError(t, err)
			got, err := NormalizeStdout(golden, cwd, ids)
			require.NoError(t, err)
			require.Empty(t, UnifiedDiff("golden+agent", "normalized", []byte(withAgentToken(t, string(golden))), got))
			again, err := NormalizeStdout(got, cwd, ids)
			require.NoError(t, err)
			require.Equal(t, string(got), string(again))

			for _, l := range logs {
				data, err := os.ReadFile(l)
				require.NoError(t, err)
				id, c := LogIdentity(data)
				once, err := NormalizeLog(data, c, []string{id}, true)
				require.NoError(t, err)
				twice, err := NormalizeLog(once, c, []string{id}, true)
				require.NoError(t, err)
				require.Empty(t, UnifiedDiff("once", "twice", once, twice), filepath.Base(l))
				// Some fixtures are stored already normalized (their header
				// holds the tokens themselves).
				if id != SessionIDToken {
					require.False(t, strings.Contains(string(once), id), "%s: id %s left after scrub", l, id)
				}
				if c != "" && c != CwdToken {
					require.False(t, strings.Contains(string(once), c), "%s: cwd %s left after scrub", l, c)
				}
				plain, err := NormalizeLog(data, c, []string{id}, false)
				require.NoError(t, err)
				plainTwice, err := NormalizeLog(plain, c, []string{id}, false)
				require.NoError(t, err)
				require.Equal(t, string(plain), string(plainTwice))
			}
		})
	}
}

// withAgentToken replaces, textually, the agentInfo and agentCapabilities
// values of the golden initialize response by "{{agent}}".
func withAgentToken(t *testing.T, golden string) string {
	t.Helper()
	lines := strings.SplitAfter(golden, "\n")
	found := false
	for i, line := range lines {
		if !strings.Contains(line, `"protocolVersion":`) {
			continue
		}
		v, err := ParseJS([]byte(line))
		require.NoError(t, err)
		res, ok := v.Get("result")
		if !ok || !res.Has("protocolVersion") {
			continue
		}
		for _, k := range []string{"agentInfo", "agentCapabilities"} {
			val, ok := res.Get(k)
			require.True(t, ok, "golden initialize response lacks %s", k)
			old := `"` + k + `":` + val.String()
			require.Equal(t, 1, strings.Count(line, old), "cannot locate %s textually", k)
			line = strings.Replace(line, old, `"`+k+`":"{{agent}}"`, 1)
		}
		lines[i] = line
		found = true
	}
	require.True(t, found, "golden has no initialize response")
	return strings.Join(lines, "")
}
