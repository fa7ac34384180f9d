package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/internal/shared"
	"github.com/dsh-acp/dsh-acp/session"
)

// corpusLogs returns every recorded session log (and child log) of the
// upstream corpus and of our own scenarios.
func corpusLogs(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, root := range []string{shared.Dir(t, shared.Upstream), filepath.Join("..", "snapshots", "testdata")} {
		require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "session") && strings.HasSuffix(d.Name(), ".jsonl") &&
				!strings.Contains(path, string(filepath.Separator)+"workspace"+string(filepath.Separator)) {
				files = append(files, path)
			}
			return err
		}))
	}
	require.Greater(t, len(files), 40, "the corpus is missing")
	return files
}

// readLog parses a session log file.
func readLog(t *testing.T, path string) (session.Header, []session.Event) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	var h session.Header
	var events []session.Event
	for i := 0; sc.Scan(); i++ {
		if i == 0 {
			require.NoError(t, json.Unmarshal(sc.Bytes(), &h), path)
			continue
		}
		var e session.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), path)
		events = append(events, e)
	}
	return h, events
}

// TestDerivedMatchesFullFolds folds every recorded log of both corpora
// one event at a time, and at every event compares the incremental state
// (history and its check, header, context use, compaction boundary, mode
// at the last header, and the folds the log keeps at hand) with the same
// folds computed from scratch over the prefix (a chunk changes none of
// them, so the comparison skips chunk events).
func TestDerivedMatchesFullFolds(t *testing.T) {
	for _, path := range corpusLogs(t) {
		t.Run(path, func(t *testing.T) {
			h, events := readLog(t, path)
			var every, atSteps derived
			for i := 1; i <= len(events); i++ {
				prefix := events[:i]
				every.sync(prefix)
				// A chunk changes nothing a request is made of (the
				// derivations skip it); comparing at every other event
				// keeps this test linear in the chunks.
				if events[i-1].Type != session.TypeAssistantChunk {
					require.NoError(t, every.verify(prefix))
					require.NoError(t, verifyLog(session.ResumeLog(h, prefix, nil, nil), approval.PolicyAsk, BuiltinKnobs()))
				}
				// A reader that looks only at step starts folds many
				// events at once; it must land on the same state.
				if events[i-1].Type == session.TypeStepStart || i == len(events) {
					atSteps.sync(prefix)
					require.NoError(t, atSteps.verify(prefix))
				}
			}
		})
	}
}

// TestDerivedCompactionKeepsRangeAndList derives a log compacted twice,
// once by a list (an older build's summary) and once by a range, and
// checks the incremental history against the full derivation after each.
func TestDerivedCompactionKeepsRangeAndList(t *testing.T) {
	log := session.NewLog(session.Header{ID: "c"}, func() int64 { return 0 }, nil)
	user := func(text string) {
		log.Append(session.TypeUserMessage, session.Message{Content: []session.Block{session.TextBlock(text)}, Source: session.UserSource})
	}
	answer := func(text string) {
		log.Append(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Content: []session.Block{session.TextBlock(text)}})
	}
	var r derived
	check := func(want ...string) {
		t.Helper()
		r.sync(log.Events())
		require.NoError(t, r.verify(log.Events()))
		msgs, _, err := r.messages()
		require.NoError(t, err)
		var got []string
		for _, m := range msgs {
			got = append(got, texts(m))
		}
		require.Equal(t, want, got)
	}
	user("one")
	answer("a1")
	user("two")
	answer("a2")
	check("one", "a1", "two", "a2")
	// An older build's summary lists what it replaced: one and a1 only.
	log.Append(TypeCompactSummary, CompactSummary{Summary: "S1", ShadowedRange: seqRange{0, 1}, ShadowedSeqs: []int{0, 1}, Model: "m"})
	check(summaryText("S1"), "two", "a2")
	user("three")
	answer("a3")
	// This build's summary names a range: everything before "three".
	log.Append(TypeCompactSummary, CompactSummary{Summary: "S2", ShadowedRange: seqRange{0, 3}, Model: "m"})
	check(summaryText("S2"), "three", "a3")
	require.NotContains(t, string(log.Events()[log.Len()-1].Data), "shadowedSeqs")
}

func summaryText(s string) string {
	return texts(llm.Message{Content: []session.Block{
		session.TextBlock("<context source=\"plugin\">"), session.TextBlock(summaryHeader + s), session.TextBlock("</context>")}})
}
