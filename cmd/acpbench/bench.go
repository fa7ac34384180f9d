package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dsh-acp/dsh-acp/bench/mockllm"
)

// Prompts of the scripted turns (see bench/mockllm for the markers).
const (
	textPrompt   = "Say hello."
	toolPrompt   = "Create the benchmark file. " + mockllm.MagicTool + " " + mockllm.MagicPath
	cancelPrompt = "Stream slowly until cancelled. " + mockllm.MagicSlow
	benchFile    = "bench.txt"
)

// agent is one ACP agent under test.
type agent struct {
	Name  string   `json:"name"`
	Argv  []string `json:"command"`
	label string   // the mock's /agent/LABEL
	env   []string // full environment
	home  string
}

// sample is one iteration's measurements, keyed like metrics.
type sample map[string]float64

// runner runs the scenario against agents.
type runner struct {
	mock    *mockllm.Server
	timeout time.Duration // per step
	grace   time.Duration // for the agent to exit after stdin closes
	work    string        // parent of the per-iteration workspaces
	trace   string        // directory of stdout copies, "" for none
	traced  int
	mcp     *mcpFleet // the MCP case's HTTP servers (nil: no MCP case)
	mcpTags int
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// session spawns a, initializes it and opens a session in a fresh
// workspace. It records spawn → initialize and session/new.
func (r *runner) session(ctx context.Context, a *agent, s sample) (*client, string, string, error) {
	ws, err := os.MkdirTemp(r.work, a.label+"-ws-")
	if err != nil {
		return nil, "", "", err
	}
	var trace io.WriteCloser
	if r.trace != "" {
		r.traced++
		if trace, err = os.Create(filepath.Join(r.trace, fmt.Sprintf("%s-%03d.jsonl", a.label, r.traced))); err != nil {
			_ = os.RemoveAll(ws)
			return nil, "", "", err
		}
	}
	c, err := spawn(a.Argv, ws, a.env, trace)
	if err != nil {
		if trace != nil {
			_ = trace.Close()
		}
		_ = os.RemoveAll(ws)
		return nil, "", "", fmt.Errorf("spawn %q: %w", a.Argv[0], err)
	}
	step, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	_, init, err := c.call(step, "initialize", map[string]any{
		"protocolVersion": 1,
		"clientCapabilities": map[string]any{
			"fs":       map[string]bool{"readTextFile": true, "writeTextFile": true},
			"terminal": false,
		},
		"clientInfo": map[string]string{"name": "acpbench", "version": "1"},
	})
	if err != nil {
		return c, "", ws, err
	}
	s["spawn_to_initialize_ms"] = ms(init.at.Sub(c.started))
	c.initResult = init.result
	sent, res, err := c.call(step, "session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})
	if err != nil {
		return c, "", ws, err
	}
	s["session_new_ms"] = ms(res.at.Sub(sent))
	var sn struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res.result, &sn); err != nil || sn.SessionID == "" {
		return c, "", ws, fmt.Errorf("session/new: no sessionId in %s", res.result)
	}
	return c, sn.SessionID, ws, nil
}

// prompt runs one turn and returns when it was sent, its reply and the
// turn's counters.
func (r *runner) prompt(ctx context.Context, c *client, sid, text string) (time.Time, reply, *turn, error) {
	t := c.beginTurn()
	step, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	sent, res, err := c.call(step, "session/prompt", map[string]any{"sessionId": sid,
		"prompt": []any{map[string]string{"type": "text", "text": text}}})
	return sent, res, t, err
}

func stopReason(res reply) string {
	var p struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(res.result, &p)
	return p.StopReason
}

// mockRecords waits until every request the mock started after seq has
// been recorded (at most 1 s) and returns them.
func (r *runner) mockRecords(seq uint64) []mockllm.Record {
	deadline := time.Now().Add(time.Second)
	for {
		last := r.mock.LastSeq()
		recs := r.mock.Records(seq)
		if uint64(len(recs)) >= last-seq || time.Now().After(deadline) {
			return recs
		}
		time.Sleep(time.Millisecond)
	}
}

// mockTime is the summed handler time and chunks of the requests the mock
// started after seq.
func (r *runner) mockTime(seq uint64) (time.Duration, int) {
	var d time.Duration
	n := 0
	for _, rec := range r.mockRecords(seq) {
		d += rec.Duration()
		n += rec.Chunks
	}
	return d, n
}

// withStderr closes c after a failure and appends the end of its stderr
// to err.
func (r *runner) withStderr(c *client, err error) error {
	if err == nil || c == nil {
		return err
	}
	_ = c.close(r.grace)
	return fmt.Errorf("%w%s", err, c.stderrHint())
}

// iterate runs the whole scenario once: initialize, session/new, a text
// turn, a tool turn and a cancelled turn.
func (r *runner) iterate(ctx context.Context, a *agent) (s sample, err error) {
	s = sample{}
	c, sid, ws, err := r.session(ctx, a, s)
	if c != nil {
		defer func() {
			err = r.withStderr(c, err)
			_ = c.close(r.grace)
			_ = os.RemoveAll(ws)
		}()
	}
	if err != nil {
		return s, err
	}
	mem := treeMemory(c.pid())
	s["rss_after_session_new_mb"], s["anon_after_session_new_mb"] = mb(mem.Current), mb(mem.Anon)

	// Text turn.
	seq := r.mock.LastSeq()
	sent, res, t, err := r.prompt(ctx, c, sid, textPrompt)
	if err != nil {
		return s, fmt.Errorf("text turn: %w", err)
	}
	if sr := stopReason(res); sr != "end_turn" {
		return s, fmt.Errorf("text turn: stopReason %q, want end_turn", sr)
	}
	turnTime := res.at.Sub(sent)
	recs := r.mockRecords(seq)
	var mockTime time.Duration
	for _, rec := range recs {
		mockTime += rec.Duration()
	}
	s["text_turn_ms"], s["mock_text_ms"], s["text_overhead_ms"] = ms(turnTime), ms(mockTime), ms(turnTime-mockTime)
	if len(recs) > 0 {
		s["before_request_ms"] = ms(recs[0].Start.Sub(sent))
		s["after_stream_ms"] = ms(res.at.Sub(recs[len(recs)-1].LastByte()))
	}
	fb, ok := r.mock.FirstByteSince(seq)
	if !ok {
		return s, errors.New("text turn: the agent made no LLM request")
	}
	first := t.firstAfter(fb)
	if first.IsZero() {
		return s, errors.New("text turn: no agent_message_chunk or agent_thought_chunk")
	}
	s["first_chunk_ms"] = ms(first.Sub(sent))

	// Tool turn: the mock asks for a file to be created in the workspace.
	target := filepath.Join(ws, benchFile)
	sent, res, _, err = r.prompt(ctx, c, sid, toolPrompt+target)
	if err != nil {
		return s, fmt.Errorf("tool turn: %w", err)
	}
	s["tool_turn_ms"] = ms(res.at.Sub(sent))
	if _, err := os.Stat(target); err != nil {
		return s, fmt.Errorf("tool turn: %s was not created (stopReason %q)", benchFile, stopReason(res))
	}

	// Cancel mid-stream.
	seq = r.mock.LastSeq()
	t = c.beginTurn()
	step, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	_, ch, err := c.start("session/prompt", map[string]any{"sessionId": sid,
		"prompt": []any{map[string]string{"type": "text", "text": cancelPrompt}}})
	if err != nil {
		return s, fmt.Errorf("cancel turn: %w", err)
	}
	// Cancel once a chunk of the model's (slow) reply has come through.
	for streaming := false; !streaming; {
		select {
		case <-t.signal:
			fb, ok := r.mock.FirstByteSince(seq)
			streaming = ok && !t.firstAfter(fb).IsZero()
		case <-step.Done():
			return s, fmt.Errorf("cancel turn: no chunk streamed: %w", step.Err())
		case <-c.done:
			return s, errors.New("cancel turn: agent exited")
		}
	}
	t.cancelled.Store(true)
	cancelled := time.Now()
	if err := c.notify("session/cancel", map[string]string{"sessionId": sid}); err != nil {
		return s, fmt.Errorf("session/cancel: %w", err)
	}
	res, err = c.wait(step, "session/prompt (cancelled)", ch)
	if err != nil {
		return s, fmt.Errorf("cancel turn: %w", err)
	}
	if sr := stopReason(res); sr != "cancelled" {
		return s, fmt.Errorf("cancel turn: stopReason %q, want cancelled", sr)
	}
	s["cancel_to_reply_ms"] = ms(res.at.Sub(cancelled))
	s["rss_after_turns_mb"] = mb(treeMemory(c.pid()).Current)

	// A second session with three MCP servers (after the RSS figures:
	// a stdio server joins the agent's process tree).
	if r.mcp != nil {
		if err := r.mcpSession(ctx, c, ws, s); err != nil {
			return s, err
		}
	}

	_ = c.close(r.grace)
	s["stdout_kb"] = float64(c.stdoutBytes.Load()) / 1024
	return s, nil
}

// stress streams one reply of n chunks through a fresh agent.
func (r *runner) stress(ctx context.Context, a *agent, n int) (s sample, err error) {
	s = sample{}
	c, sid, ws, err := r.session(ctx, a, s)
	if c != nil {
		defer func() {
			err = r.withStderr(c, err)
			_ = c.close(r.grace)
			_ = os.RemoveAll(ws)
		}()
	}
	if err != nil {
		return s, err
	}
	before := c.stdoutBytes.Load()
	seq := r.mock.LastSeq()
	sm := startSampler(c.pid(), 5*time.Millisecond)
	agentCPU, clientCPU := treeCPU(c.pid()), selfCPU()
	sent, res, t, err := r.prompt(ctx, c, sid, "Stream a long reply. "+mockllm.MagicChunks+strconv.Itoa(n))
	agentCPU, clientCPU = treeCPU(c.pid())-agentCPU, selfCPU()-clientCPU
	peak := sm.done()
	if err != nil {
		return s, fmt.Errorf("stress turn: %w", err)
	}
	if sr := stopReason(res); sr != "end_turn" {
		return s, fmt.Errorf("stress turn: stopReason %q, want end_turn", sr)
	}
	d := res.at.Sub(sent)
	mockTime, chunks := r.mockTime(seq)
	if chunks < n {
		return s, fmt.Errorf("stress turn: the mock streamed %d of %d chunks", chunks, n)
	}
	s["turn_ms"], s["mock_ms"] = ms(d), ms(mockTime)
	s["chunks_per_s"] = float64(n) / d.Seconds()
	s["updates"] = float64(t.updates.Load())
	s["agent_cpu_ms"], s["client_cpu_ms"] = ms(agentCPU), ms(clientCPU)
	s["peak_rss_mb"] = mb(peak)
	s["hwm_rss_mb"] = mb(treeMemory(c.pid()).Peak)
	s["stdout_mb"] = mb(c.stdoutBytes.Load() - before)
	return s, nil
}
