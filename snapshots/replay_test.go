package snapshots

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/internal/shared"
)

// corpusRoot locates ../shared/upstream (internal/shared).
func corpusRoot(t *testing.T) string {
	t.Helper()
	return shared.Dir(t, shared.Upstream)
}

// mustPass lists the upstream scenarios this build replays byte for byte;
// a regression in any of them fails `make test`. The rest of the corpus is
// tracked by `make conformance`.
var mustPass = []string{
	"acp-agent/handshake",
	"acp-agent/reject-extra-dirs",
	"acp-agent/text-turn",
	"acp-agent/cancel",
	"acp-agent/error-finish",
	"acp-agent/todo-plan",
	"acp-agent/fs-read",
	"acp-agent/fs-write",
	"acp-agent/fs-edit",
	"acp-agent/fs-policy-reject",
	"plan-acp-agent/plan-mode",
	"acp-agent/tool-call-turn",
	"acp-agent/fs-terminal-card",
	"sandbox-acp-agent/mode-switching",
	"sandbox-acp-agent/escalation-approved",
	"sandbox-acp-agent/config-options",
	"plan-acp-agent/modes-advertise",
	"acp-agent/hook-cc-posttool-block",
	"acp-agent/hook-cc-posttool-context",
	"acp-agent/hook-cc-pretool-ask",
	"acp-agent/hook-cc-promptsubmit-block",
	"acp-agent/hook-cc-promptsubmit-context",
	"acp-agent/hook-cc-stop-continue",
	"acp-agent/hook-codex-posttool-block",
	"acp-agent/hook-codex-pretool-block",
	"acp-agent/hook-codex-promptsubmit-block",
	"acp-agent/hook-codex-promptsubmit-context",
	"acp-agent/hook-codex-stop-continue",
	"acp-agent/repeat-tool-guard",
	"acp-agent/subagent-spawn",
	"acp-agent/subagent-fork",
	"acp-agent/subagent-mixed",
	"acp-agent/workflow-run",
	"acp-agent/code-mode-turn",
	"acp-agent/both-mode-turn",
}

func TestUpstreamScenariosReplayInProcess(t *testing.T) {
	root := corpusRoot(t)
	var mu sync.Mutex
	headers := map[string]map[string]string{} // composition → scenario → first request/header
	t.Run("scenarios", func(t *testing.T) {
		for _, name := range mustPass {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sc, err := Load(filepath.Join(root, name))
				require.NoError(t, err)
				r := Run(context.Background(), sc, InProcess{Version: "test"}, Options{Timeout: 30 * time.Second})
				require.True(t, r.Passed, "%s\n%s", r.Message, r.Diff)
				validateTimeline(t, r.Timeline)
				// Children are full agents: each child's first header is
				// its parent's (subagents-workflows § 1).
				for i := 1; i < len(r.Logs); i++ {
					require.Equal(t, firstHeader(t, r.Logs[:1]), firstHeader(t, r.Logs[i:i+1]), "child log %d's header", i)
				}
				if h := firstHeader(t, r.Logs); h != "" {
					mu.Lock()
					if headers[sc.Meta.Composition] == nil {
						headers[sc.Meta.Composition] = map[string]string{}
					}
					headers[sc.Meta.Composition][name] = h
					mu.Unlock()
				}
			})
		}
	})
	require.GreaterOrEqual(t, len(headers["acp-agent"]), 5, "the guard compares real headers")
	// Our uniformity guard (replay contract § 5, project rule): within one
	// composition, every scenario's request header is identical in full.
	for comp, byScenario := range headers {
		var first, firstName string
		for name, h := range byScenario {
			if first == "" {
				first, firstName = h, name
				continue
			}
			require.Equal(t, first, h, "composition %s: the request header of %s differs from %s's", comp, name, firstName)
		}
	}
}

// firstHeader returns the header of the first request/header event of the
// primary log, with the session's cwd scrubbed.
func firstHeader(t *testing.T, logs [][]byte) string {
	t.Helper()
	if len(logs) == 0 {
		return ""
	}
	_, cwd := LogIdentity(logs[0])
	for _, line := range strings.Split(string(logs[0]), "\n") {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Header json.RawMessage `json:"header"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "request/header" {
			return strings.ReplaceAll(string(ev.Data.Header), cwd, "{{cwd}}")
		}
	}
	return ""
}

// TestSubprocessOverRealStdio builds the real binary and drives it the way
// an editor does: `dsh-acp --composition acp-agent --sessions-root D
// --model-replay S` over its stdin/stdout.
func TestSubprocessOverRealStdio(t *testing.T) {
	root := corpusRoot(t)
	bin := binary(t)
	for _, name := range []string{"acp-agent/handshake", "acp-agent/reject-extra-dirs", "acp-agent/text-turn"} {
		sc, err := Load(filepath.Join(root, name))
		require.NoError(t, err)
		r := Run(context.Background(), sc, Subprocess{Binary: bin}, Options{Timeout: 30 * time.Second})
		require.True(t, r.Passed, "%s: %s\n%s", name, r.Message, r.Diff)
	}
}

// TestReplayDetectsMismatch makes sure the comparison can fail: a golden
// with one changed byte must be reported with a diff.
func TestReplayDetectsMismatch(t *testing.T) {
	root := corpusRoot(t)
	dir := t.TempDir()
	require.NoError(t, copyTree(filepath.Join(root, "acp-agent", "text-turn"), dir))
	golden := filepath.Join(dir, "stdout.golden.jsonl")
	data, err := os.ReadFile(golden)
	require.NoError(t, err)
	i := strings.LastIndex(string(data), `"text":"ONG"`)
	require.Positive(t, i)
	changed := string(data[:i]) + `"text":"ING"` + string(data[i+len(`"text":"ONG"`):])
	require.NoError(t, os.WriteFile(golden, []byte(changed), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scenario.json"), []byte(`{"composition":"acp-agent","hasModelTurn":true}`), 0o644))
	sc, err := Load(dir)
	require.NoError(t, err)
	r := Run(context.Background(), sc, InProcess{}, Options{Timeout: 30 * time.Second})
	require.False(t, r.Passed)
	require.Contains(t, r.Diff, `-{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"{{sessionId}}","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"ING"}}}}`)
	require.Contains(t, r.Diff, `+{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"{{sessionId}}","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"ONG"}}}}`)
}

// TestOwnScenarios replays our own corpus (snapshots/testdata).
func TestOwnScenarios(t *testing.T) {
	scs, err := Discover("testdata")
	require.NoError(t, err)
	for _, sc := range scs {
		t.Run(sc.Name(), func(t *testing.T) {
			t.Parallel()
			r := Run(context.Background(), sc, InProcess{Version: "test"}, Options{Timeout: 30 * time.Second})
			require.True(t, r.Passed, "%s\n%s", r.Message, r.Diff)
			validateTimeline(t, r.Timeline)
		})
	}
}

func TestUpdateRefusesUpstreamCorpus(t *testing.T) {
	root := corpusRoot(t)
	sc, err := Load(filepath.Join(root, "acp-agent", "handshake"))
	require.NoError(t, err)
	r := Run(context.Background(), sc, InProcess{}, Options{Update: true})
	require.False(t, r.Passed)
	require.Contains(t, r.Message, "refusing --update")
}
