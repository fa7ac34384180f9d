package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Sizes of the soak.
const (
	soakSessions = 20
	soakTurns    = 6
	// soakRSSLimit bounds the agent's resident memory, in kB.
	soakRSSLimit = 200 << 10
)

// soakPrompt is one prompt of the soak and its outcome.
type soakPrompt struct {
	session   string
	id        string
	script    string
	request   int64
	cancelled bool   // session/cancel was sent before its response came
	duringRun bool   // …while one of its tool cards was open
	reason    string // the stop reason answered
	err       error
}

// TestSoak drives one connection with many sessions taking turns that run
// tools, a random subset of them cancelled at random points (some while a
// command runs), and checks ACP's ordering rules on what came back:
// exactly one response per prompt; no update of a session between the
// response to its prompt and its next prompt; per session, each
// tool_call_update after its tool_call; no prompt that was not cancelled
// answered cancelled; every model request a valid chat sequence; and the
// agent's memory bounded.
func TestSoak(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (set RELIABILITY_SEED to repeat)", seed)
	base := t.TempDir()
	ws := filepath.Join(base, "workspace")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	m := newModel(t, 2*time.Millisecond)
	a := startAgent(t, agentConfig{root: filepath.Join(base, "sessions"), store: "jsonl", model: m, dir: ws})

	var (
		mu      sync.Mutex
		prompts []*soakPrompt
		wg      sync.WaitGroup
	)
	begin := time.Now()
	for s := range soakSessions {
		rng := rand.New(rand.NewPCG(seed, uint64(s)+100))
		wg.Go(func() {
			sid := a.newSession(ws)
			for turn := range soakTurns {
				p := soakTurn(t, a, rng, sid, fmt.Sprintf("s%d-t%d", s, turn))
				mu.Lock()
				prompts = append(prompts, p)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(begin)
	rss, hwm, err := a.memory()
	require.NoError(t, err)

	cancels, during, cancelledAnswers := 0, 0, 0
	var wrongCancel, failed []string
	bySession := map[string][]*soakPrompt{}
	for _, p := range prompts {
		bySession[p.session] = append(bySession[p.session], p)
		if p.cancelled {
			cancels++
		}
		if p.duringRun {
			during++
		}
		if p.reason == "cancelled" {
			cancelledAnswers++
		}
		if !p.cancelled && p.err == nil {
			want := []string{"completed", "completed", "completed"}
			if strings.HasPrefix(p.script, "text") {
				want = nil
			}
			if got := cardResults(a.updates(p.session), p.request); !slices.Equal(got, want) {
				failed = append(failed, fmt.Sprintf("%s: tool cards ended %v, want %v", p.id, got, want))
			}
		}
		switch {
		case p.err != nil:
			failed = append(failed, fmt.Sprintf("%s: %v", p.id, p.err))
		case !p.cancelled && p.reason != "end_turn":
			wrongCancel = append(wrongCancel, fmt.Sprintf("%s answered %q", p.id, p.reason))
		case p.cancelled && p.reason != "end_turn" && p.reason != "cancelled":
			wrongCancel = append(wrongCancel, fmt.Sprintf("cancelled %s answered %q", p.id, p.reason))
		}
	}

	// Updates outside their turn, and cards out of order, per session.
	late := map[string]int{}
	var lateSamples, order []string
	for sid, ps := range bySession {
		owner := map[int64]string{}
		for _, p := range ps {
			owner[p.request] = p.id
		}
		us := a.updates(sid)
		for _, b := range orderProblems(us) {
			order = append(order, sid[:8]+": "+b)
		}
		for _, l := range lateUpdates(us, owner) {
			late[l.kind]++
			lateSamples = append(lateSamples, sid[:8]+" "+l.what)
		}
	}
	sort.Strings(lateSamples)
	lateTotal := 0
	for _, n := range late {
		lateTotal += n
	}
	t.Logf("soak: %d sessions × %d turns = %d prompts in %v; %d cancels (%d while a tool ran), %d answered cancelled; "+
		"%d model requests; violations: %d late updates %v, %d card order, %d wrong stop reasons, %d stray responses; "+
		"agent VmRSS %d kB, VmHWM %d kB",
		soakSessions, soakTurns, len(prompts), elapsed.Round(time.Millisecond), cancels, during, cancelledAnswers,
		len(m.Requests()), lateTotal, late, len(order), len(wrongCancel), len(a.strayResponses()), rss, hwm)

	require.Len(t, prompts, soakSessions*soakTurns)
	assert.Empty(t, failed, "prompts that failed")
	assert.Empty(t, a.strayResponses(), "exactly one response per prompt")
	assert.Empty(t, wrongCancel, "a prompt that was not cancelled is answered end_turn")
	assert.Empty(t, order, "per session, every tool_call_update follows its tool_call")
	assert.Empty(t, lateSamples[:min(len(lateSamples), 20)],
		"ACP: every update of a turn comes before the response to its prompt (%d such updates in all, by kind %v)", lateTotal, late)
	assert.Empty(t, m.Violations(), "every model request is a valid chat sequence")
	assert.Greater(t, cancels, 0)
	assert.Greater(t, during, 0, "some cancels hit a running command")
	assert.Less(t, hwm, int64(soakRSSLimit), "agent peak RSS (kB)")
	require.NoError(t, a.close(), "the agent exits when stdin closes%s", a.stderr.hint())
}

// soakTurn sends one prompt and, for a random subset, cancels it: at a
// random delay, or while its command runs.
func soakTurn(t *testing.T, a *agentProc, rng *rand.Rand, sid, id string) *soakPrompt {
	name := "soak"
	if rng.IntN(5) == 0 {
		name = "text"
	}
	p := &soakPrompt{session: sid, id: id, script: name}
	mode := rng.IntN(10) // 0-1: cancel at a random delay, 2-3: cancel while the command runs
	req, ch, err := a.prompt(sid, marker(name, id)+" soak prompt")
	if err != nil {
		p.err = err
		return p
	}
	p.request = req
	var cancelAt <-chan time.Time
	switch {
	case mode < 2:
		cancelAt = time.After(time.Duration(rng.IntN(500)) * time.Millisecond)
	case mode < 4 && name == "soak":
		cancelAt = toolRunning(a, sid, req, time.Duration(rng.IntN(150))*time.Millisecond)
	}
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	select {
	case r := <-ch:
		p.reason, p.err = decodeStop(r)
		return p
	case <-cancelAt:
		p.duringRun = cardOpen(a.updates(sid), req)
		p.cancelled = true
		if err := a.cancel(sid); err != nil {
			p.err = err
			return p
		}
	case <-ctx.Done():
		p.err = fmt.Errorf("no response in 30 s")
		return p
	}
	p.reason, p.err = a.stopReason(ctx, ch)
	return p
}

// lateUpdate is an update that came outside the turn it belongs to.
type lateUpdate struct {
	kind string
	what string
}

// lateUpdates finds a session's updates that break ACP's rule that a
// turn's updates all come before the response to its prompt: an update
// with no prompt in flight (session-level available_commands_update
// aside), or a tool_call_update arriving during a later prompt than its
// tool_call. owner names prompts by request id, for the messages.
func lateUpdates(us []update, owner map[int64]string) []lateUpdate {
	var out []lateUpdate
	cardTurn := map[string]int64{}
	for i, u := range us {
		if u.Kind == "tool_call" {
			cardTurn[u.ToolCallID] = u.Request
		}
		switch {
		case u.Kind == "available_commands_update":
		case u.Request == 0:
			out = append(out, lateUpdate{u.Kind, fmt.Sprintf("update %d (%s %s %s) after the response to its prompt",
				i, u.Kind, u.ToolCallID, u.Status)})
		case u.Kind == "tool_call_update" && cardTurn[u.ToolCallID] != u.Request:
			out = append(out, lateUpdate{u.Kind, fmt.Sprintf("update %d (%s %s %s) of prompt %q arrived during prompt %q",
				i, u.Kind, u.ToolCallID, u.Status, owner[cardTurn[u.ToolCallID]], owner[u.Request])})
		}
	}
	return out
}

// decodeStop reads a stop reason out of a prompt's response.
func decodeStop(r response) (string, error) {
	if r.Err != nil {
		return "", fmt.Errorf("session/prompt: %w", r.Err)
	}
	return parseStop(r.Result)
}

// toolRunning fires after extra once prompt req of sid shows a tool card
// that has no result yet.
func toolRunning(a *agentProc, sid string, req int64, extra time.Duration) <-chan time.Time {
	out := make(chan time.Time, 1)
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if cardOpen(a.updates(sid), req) {
				time.Sleep(extra)
				out <- time.Now()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return out
}

// cardOpen reports whether prompt req has a tool card without a final
// status.
func cardOpen(us []update, req int64) bool {
	open := map[string]bool{}
	for _, u := range us {
		if u.Request != req {
			continue
		}
		switch {
		case u.Kind == "tool_call":
			open[u.ToolCallID] = true
		case u.Kind == "tool_call_update" && (u.Status == "completed" || u.Status == "failed"):
			delete(open, u.ToolCallID)
		}
	}
	return len(open) > 0
}

// TestPromptAfterCancel cancels a turn whose command ignores SIGTERM,
// sends a prompt, cancels it, and sends another: the last one runs
// normally, is answered end_turn, and its message reaches the model.
func TestPromptAfterCancel(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "workspace")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	m := newModel(t, time.Millisecond)
	a := startAgent(t, agentConfig{root: filepath.Join(base, "sessions"), store: "jsonl", model: m, dir: ws})
	sid := a.newSession(ws)
	ctx, stop := context.WithTimeout(context.Background(), 45*time.Second)
	defer stop()

	reqA, chA, err := a.prompt(sid, marker("trap", "A")+" run a stubborn command")
	require.NoError(t, err)
	select {
	case <-toolRunning(a, sid, reqA, 300*time.Millisecond): // the trap is set by now
	case r := <-chA:
		t.Fatalf("A was answered before its command ran: %+v %s", r, r.Result)
	}
	require.NoError(t, a.cancel(sid))
	reasonA, err := a.stopReason(ctx, chA)
	require.NoError(t, err)
	assert.Equal(t, "cancelled", reasonA, "A")

	_, chB, err := a.prompt(sid, marker("text", "B")+" second")
	require.NoError(t, err)
	require.NoError(t, a.cancel(sid))
	reasonB, err := a.stopReason(ctx, chB)
	require.NoError(t, err)
	assert.Contains(t, []string{"cancelled", "end_turn"}, reasonB, "B")

	cText := marker("text", "C") + " third"
	reqC, chC, err := a.prompt(sid, cText)
	require.NoError(t, err)
	reasonC, err := a.stopReason(ctx, chC)
	require.NoError(t, err)
	assert.Equal(t, "end_turn", reasonC, "C runs normally after the cancels")
	reqs := m.RequestsFor("C")
	require.NotEmpty(t, reqs, "C's message reaches the model")
	assert.Equal(t, cText, reqs[0].Users[len(reqs[0].Users)-1], "C's message is the last user message of its request")
	var text strings.Builder
	for _, u := range a.updates(sid) {
		if u.Request == reqC && u.Kind == "agent_message_chunk" {
			text.WriteString(u.Text)
		}
	}
	assert.Equal(t, "All done for C.", text.String(), "C streams its answer")
	assert.Empty(t, m.Violations(), "every model request is a valid chat sequence")
	assert.Empty(t, lateUpdates(a.updates(sid), map[int64]string{reqA: "A", reqC: "C"}),
		"every update of a turn comes before the response to its prompt")
	t.Logf("B reached the model: %v; B answered %s", len(m.RequestsFor("B")) > 0, reasonB)
	require.NoError(t, a.close())
}
