package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crashKills is how many times each store's agent is killed.
const crashKills = 20

// testSeed is RELIABILITY_SEED, else the clock; the tests log it so a
// failing run can be repeated.
func testSeed(t *testing.T) uint64 {
	if s := os.Getenv("RELIABILITY_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "RELIABILITY_SEED")
		return n
	}
	return uint64(time.Now().UnixNano())
}

// TestCrashRecovery kills a real dsh-acp with SIGKILL at random points of
// turns that run tools (bash, write, read), for both stores. After every
// kill a new process on the same sessions root must load the session, the
// stored log must be intact (every answered prompt there with its
// turn/end, seqs contiguous, an interrupted turn closed by crash repair),
// and the conversation must continue: a new prompt ends end_turn and every
// request the model receives is a valid chat sequence carrying the whole
// history.
func TestCrashRecovery(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (set RELIABILITY_SEED to repeat)", seed)
	for i, store := range []string{"jsonl", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			crashStore(t, store, rand.New(rand.NewPCG(seed, uint64(i))))
		})
	}
}

// sentPrompt is a prompt of the crash test and what became of it.
type sentPrompt struct {
	id    string
	acked bool // answered before the agent died
}

func crashStore(t *testing.T, store string, rng *rand.Rand) {
	base := t.TempDir()
	root, ws := filepath.Join(base, "sessions"), filepath.Join(base, "workspace")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	m := newModel(t, 2*time.Millisecond)
	cfg := agentConfig{root: root, store: store, model: m, dir: ws}
	ctx := context.Background()

	var (
		sid         string
		sent        []sentPrompt
		interrupted int // kills that left a turn for crash repair to close
		ackedKills  int // kills that came after the prompt was answered
		survived    int
		orderBad    []string
		openOnDisk  int // kills that left the log ending inside a turn
		tornOnDisk  int // kills that left a torn last line (JSONL)
	)
	for kill := 0; kill <= crashKills; kill++ {
		a := startAgent(t, cfg)
		if sid == "" {
			sid = a.newSession(ws)
		} else {
			require.NoError(t, a.load(sid, ws), "kill %d: session/load after the crash%s", kill, a.stderr.hint())
			n, bad := verifyStored(t, store, root, ws, sid, sent, a.updates(sid))
			interrupted += n
			survived++
			if len(bad) > 0 {
				orderBad = bad // each load replays the whole log: the last one has them all
			}
		}

		// The conversation continues: a full turn with tools.
		cont := fmt.Sprintf("%s-c%d", store, kill)
		begin := time.Now()
		req, ch, err := a.prompt(sid, marker("tools", cont)+" continue after restart")
		require.NoError(t, err)
		reason, err := a.stopReason(ctx, ch)
		require.NoError(t, err, "kill %d: the prompt after the restart", kill)
		require.Equal(t, "end_turn", reason, "kill %d: the prompt after the restart", kill)
		turnTime := time.Since(begin)
		require.Equal(t, []string{"completed", "completed", "completed"}, cardResults(a.updates(sid), req),
			"kill %d: bash, write and read all succeed after the restart", kill)
		assert.FileExists(t, filepath.Join(ws, "f-"+cont+".txt"))
		sent = append(sent, sentPrompt{id: cont, acked: true})
		reqs := m.RequestsFor(cont)
		require.Len(t, reqs, 4, "kill %d: three tool steps and the answer", kill)
		require.Empty(t, m.Violations(), "kill %d: invalid chat sequences sent to the model", kill)
		assertHistory(t, reqs[0], sent[:len(sent)-1])

		if kill == crashKills {
			require.NoError(t, a.close(), "the last agent exits cleanly%s", a.stderr.hint())
			break
		}
		// The victim: a turn with tools, killed after a random delay.
		victim := fmt.Sprintf("%s-k%d", store, kill)
		delay := time.Duration(rng.Float64() * float64(turnTime))
		_, ch, err = a.prompt(sid, marker("tools", victim)+" to be killed")
		require.NoError(t, err)
		time.Sleep(delay)
		a.crash()
		p := sentPrompt{id: victim}
		select {
		case r := <-ch:
			require.Nil(t, r.Err, "prompt %s failed before the kill", victim)
			p.acked = true
			ackedKills++
		default:
		}
		sent = append(sent, p)
		// What the kill left on disk, before any repair.
		if events, torn, err := readStoredLog(store, root, ws, sid); err == nil {
			if torn {
				tornOnDisk++
			}
			if _, bad := checkLog(events); len(bad) > 0 && strings.HasPrefix(bad[len(bad)-1], "the log ends inside") {
				openOnDisk++
			}
		}
		t.Logf("kill %d after %v (turn takes %v), answered before: %v", kill, delay.Round(time.Millisecond),
			turnTime.Round(time.Millisecond), p.acked)
	}
	assert.Empty(t, m.Violations())
	t.Logf("%s: %d kills survived (%d left an open turn on disk, %d a torn line; crash repair closed %d turns "+
		"interrupted; %d kills came after the answer)", store, survived, openOnDisk, tornOnDisk, interrupted, ackedKills)
	assert.Equal(t, crashKills, survived)
	assert.Equal(t, openOnDisk, interrupted, "every turn a kill left open was closed interrupted on load")
	// ACP: a tool_call_update refers to a tool call the client was shown.
	assert.Empty(t, orderBad, "session/load replays a tool_call_update with no tool_call before it: crash repair "+
		"closed a tool call that an assistant/message announced but that never got its tool/call event (the kill "+
		"came before the tool/call was persisted), and the presenter renders that closer as an update of a card "+
		"the editor never saw")
}

// verifyStored checks the stored log after a restarted agent loaded it, and
// the load replay it streamed. It returns 1 if crash repair closed the
// last killed prompt's turn, and the replay's card order problems.
func verifyStored(t *testing.T, store, root, cwd, sid string, sent []sentPrompt, replay []update) (repaired int, orphans []string) {
	t.Helper()
	events, torn, err := readStoredLog(store, root, cwd, sid)
	require.NoError(t, err)
	assert.False(t, torn, "the loaded log still ends in a torn line")
	turns, bad := checkLog(events)
	require.Empty(t, bad, "the stored log after load is not well formed; its end:\n%s", tail(events, 40))

	last := -1
	for _, p := range sent {
		turn, i, ok := turnOf(turns, p.id)
		if p.acked {
			require.True(t, ok, "answered prompt %s is missing from the log", p.id)
			assert.Equal(t, "completed", turn.End, "answered prompt %s", p.id)
		}
		if !ok {
			continue
		}
		require.Greater(t, i, last, "prompt %s is out of order in the log", p.id)
		last = i
		if !p.acked {
			assert.Contains(t, []string{"completed", "interrupted"}, turn.End, "killed prompt %s", p.id)
		}
	}
	for _, tr := range turns {
		assert.Contains(t, []string{"completed", "interrupted"}, tr.End, "turn %d", tr.Turn)
	}
	if p := sent[len(sent)-1]; !p.acked {
		if turn, _, ok := turnOf(turns, p.id); ok && turn.End == "interrupted" {
			repaired = 1
		}
	}

	// The load replayed the log: every prompt of it, every card closed.
	var users []string
	for _, u := range replay {
		if u.Kind == "user_message_chunk" {
			users = append(users, u.Text)
		}
	}
	var stored []string
	calls, results := 0, 0
	for _, tr := range turns {
		stored = append(stored, tr.Users...)
		calls += tr.Calls + tr.Uncalled
		results += tr.Results
	}
	assert.Equal(t, stored, users, "the load replays the stored prompts")
	assert.Equal(t, calls, countKind(replay, "tool_call"), "load replay: one tool_call per stored tool/call and per closer of a call never logged")
	assert.Equal(t, results, countKind(replay, "tool_call_update"), "load replay: one tool_call_update per stored tool/result")
	orphans = orderProblems(replay)
	return repaired, orphans
}

// assertHistory checks that the model's first request of a turn carries
// every earlier answered prompt, in order.
func assertHistory(t *testing.T, first modelRequest, earlier []sentPrompt) {
	t.Helper()
	var want, got []string
	for _, p := range earlier {
		if p.acked {
			want = append(want, p.id)
		}
	}
	acked := map[string]bool{}
	for _, id := range want {
		acked[id] = true
	}
	for _, u := range first.Users {
		if sm := markerRE.FindStringSubmatch(u); sm != nil && acked[sm[2]] {
			got = append(got, sm[2])
		}
	}
	assert.Equal(t, want, got, "the history the model receives")
}

// cardResults lists, for each tool card of prompt req in the order the
// cards opened, the status its last tool_call_update left it in. A
// running command's live refreshes (in_progress updates while it runs,
// more of them on a slow machine) do not count; a card they leave behind
// in_progress does.
func cardResults(us []update, req int64) []string {
	var order []string
	last := map[string]string{}
	for _, u := range us {
		if u.Request != req || u.Kind != "tool_call_update" || u.Status == "" {
			continue
		}
		if _, seen := last[u.ToolCallID]; !seen {
			order = append(order, u.ToolCallID)
		}
		last[u.ToolCallID] = u.Status
	}
	out := make([]string, 0, len(order))
	for _, id := range order {
		out = append(out, last[id])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// countKind counts updates of one kind.
func countKind(us []update, kind string) int {
	n := 0
	for _, u := range us {
		if u.Kind == kind {
			n++
		}
	}
	return n
}

// orderProblems checks one session's cards: every tool_call_update
// follows its tool_call, and no tool_call repeats.
func orderProblems(us []update) []string {
	var bad []string
	called := map[string]bool{}
	for i, u := range us {
		switch u.Kind {
		case "tool_call":
			if called[u.ToolCallID] {
				bad = append(bad, fmt.Sprintf("update %d: tool_call %s repeated", i, u.ToolCallID))
			}
			called[u.ToolCallID] = true
		case "tool_call_update":
			if !called[u.ToolCallID] {
				bad = append(bad, fmt.Sprintf("update %d: tool_call_update %s before its tool_call", i, u.ToolCallID))
			}
		}
	}
	return bad
}

// tail renders the last n events of a log for failure messages.
func tail(events []logEvent, n int) string {
	var sb strings.Builder
	for _, e := range events[max(0, len(events)-n):] {
		d := string(e.Data)
		if len(d) > 160 {
			d = d[:160] + "…"
		}
		fmt.Fprintf(&sb, "  %d %s %s\n", e.Seq, e.Type, d)
	}
	return sb.String()
}
