package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
)

// Compaction event types (session-log contract § 2): compact/start
// {turn}, compact/summary {summary, shadowedRange, shadowedSeqs?,
// shadowedTokenCount, model, maxTokens?}, compact/end {turn, error?}.
// This build records what a summary replaces as shadowedRange alone
// (every surface event from start to end); a log that lists
// shadowedSeqs (an older build's) is read by its list.
const (
	TypeCompactStart   = "compact/start"
	TypeCompactSummary = "compact/summary"
	TypeCompactEnd     = "compact/end"
)

// Compaction configures the summary of the older conversation.
type Compaction struct {
	// Window is the model's context window in tokens.
	Window int
	// Threshold is the fraction of Window whose use starts a compaction
	// before the next model call (default 0.8).
	Threshold float64
	// MaxTokens bounds the summary (zero: the provider's default).
	MaxTokens int
}

// DefaultCompactThreshold is Compaction.Threshold's default.
const DefaultCompactThreshold = 0.8

// compactStart is the data of compact/start.
type compactStart struct {
	Turn int `json:"turn"`
}

// compactEnd is the data of compact/end.
type compactEnd struct {
	Turn  int    `json:"turn"`
	Error string `json:"error,omitempty"`
}

// CompactSummary is the data of compact/summary: the summary, what it
// replaces in the model's history, and the model and budget that wrote it.
// ShadowedSeqs, when present, lists the replaced surface events; absent,
// ShadowedRange names them (every surface event from Start to End), so a
// summary's size does not grow with the session.
type CompactSummary struct {
	Summary            string   `json:"summary"`
	ShadowedRange      seqRange `json:"shadowedRange"`
	ShadowedSeqs       []int    `json:"shadowedSeqs,omitempty"`
	ShadowedTokenCount int      `json:"shadowedTokenCount"`
	Model              string   `json:"model"`
	MaxTokens          *int     `json:"maxTokens,omitempty"`
}

type seqRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// compactPrompt is the summariser's instruction.
const compactPrompt = "You are summarising a coding session between a user and an AI coding agent so that the agent " +
	"can continue it with less context. Write a concise but complete summary: the user's goals and requests, decisions " +
	"made, files read or changed (with paths) and what changed, commands run and their outcomes, errors met and how " +
	"they were handled, and what is still to do. Keep exact names, paths and values. Do not invent anything."

// compactRequest is the last user message of the summarising call.
const compactRequest = "Summarise the conversation above now, following your instructions."

// summaryHeader opens the summary in the model's history.
const summaryHeader = "Summary of the earlier conversation (it was compacted to save context):\n\n"

// isSurface reports the five surface event types.
func isSurface(t string) bool {
	switch t {
	case session.TypeUserMessage, session.TypeAssistantMessage, session.TypeToolResult, session.TypeContextMessage, session.TypeSteeringMessage:
		return true
	}
	return false
}

// compacted returns the events the model's history is derived from: after
// the latest compact/summary, its shadowed surface events are left out
// and the summary takes the place of the first of them, as context.
func compacted(events []session.Event) []session.Event {
	at, sum := latestSummary(events)
	if at < 0 {
		return events
	}
	shadowed := sum.shadows()
	out := make([]session.Event, 0, len(events))
	placed := false
	for _, e := range events {
		if isSurface(e.Type) && shadowed(e.Seq) {
			if !placed {
				out = append(out, summaryEvent(sum, events[at].Seq))
				placed = true
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// eachCompactedSurface calls fn with the surface events of
// compacted(events), in order, without building that slice; past the
// first event a range summary replaces, it skips to the end of the range
// (the events within it are all either shadowed or not surface events),
// so a rederivation costs what the events after the summary's range do.
func eachCompactedSurface(events []session.Event, fn func(session.Event)) {
	at, sum := latestSummary(events)
	if at < 0 {
		for _, e := range events {
			if isSurface(e.Type) {
				fn(e)
			}
		}
		return
	}
	shadowed := sum.shadows()
	placed := false
	for i := 0; i < len(events); i++ {
		e := events[i]
		if !isSurface(e.Type) {
			continue
		}
		if !shadowed(e.Seq) {
			fn(e)
			continue
		}
		if !placed {
			fn(summaryEvent(sum, events[at].Seq))
			placed = true
		}
		if sum.ShadowedSeqs == nil {
			end := sum.ShadowedRange.End
			i += sort.Search(len(events)-i, func(j int) bool { return events[i+j].Seq > end }) - 1
		}
	}
}

// latestSummary returns the index and content of the latest
// compact/summary in events (-1 when there is none).
func latestSummary(events []session.Event) (int, CompactSummary) {
	var sum CompactSummary
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == TypeCompactSummary && json.Unmarshal(events[i].Data, &sum) == nil {
			return i, sum
		}
	}
	return -1, sum
}

// summaryEvent is the context message that stands in the history for
// what sum replaced, at the summary's seq.
func summaryEvent(sum CompactSummary, seq int) session.Event {
	msg, _ := json.Marshal(session.Message{Content: []session.Block{session.TextBlock(summaryHeader + sum.Summary)},
		Source: session.PluginSource("compaction")})
	return session.Event{Type: session.TypeContextMessage, Seq: seq, Data: msg}
}

// shadows returns whether the summary replaces the surface event seq.
func (sum CompactSummary) shadows() func(seq int) bool {
	if sum.ShadowedSeqs == nil {
		r := sum.ShadowedRange
		return func(seq int) bool { return seq >= r.Start && seq <= r.End }
	}
	set := make(map[int]bool, len(sum.ShadowedSeqs))
	for _, q := range sum.ShadowedSeqs {
		set[q] = true
	}
	return func(seq int) bool { return set[seq] }
}

// usedTokens is the context use the latest model call reported; zero
// when a compaction came after it (its request is not sent any more).
func usedTokens(events []session.Event) int {
	for i := len(events) - 1; i >= 0; i-- {
		switch events[i].Type {
		case TypeCompactSummary:
			return 0
		case session.TypeAssistantMessage:
			var m struct {
				Usage *llm.Usage `json:"usage"`
			}
			if json.Unmarshal(events[i].Data, &m) != nil || m.Usage == nil {
				continue
			}
			used := m.Usage.InputTokens + m.Usage.OutputTokens
			if m.Usage.CacheReadTokens != nil {
				used += *m.Usage.CacheReadTokens
			}
			return used
		}
	}
	return 0
}

// shouldCompact reports whether the context use passed the threshold.
func (s *Session) shouldCompact() bool {
	c := s.rt.cfg.Compaction
	if c == nil || c.Window <= 0 {
		return false
	}
	th := c.Threshold
	if th <= 0 || th >= 1 {
		th = DefaultCompactThreshold
	}
	r := s.derive()
	used := r.used
	r.mu.Unlock()
	return float64(used) >= th*float64(c.Window)
}

// Compact summarises the conversation before the current prompt with one
// model call (as /compact does) and returns a report for the user.
func (s *Session) Compact(ctx context.Context) string {
	text, _ := s.compact(ctx, s.log.LastTurn(), 1, "on request")
	return text
}

// compact runs one compaction as step `step` of the open turn: the
// surface events before the turn's latest user message are summarised
// and shadowed. It returns the report and whether a summary was logged.
// A failed model call leaves the conversation as it was, with a notice.
func (s *Session) compact(ctx context.Context, turn, step int, why string) (string, bool) {
	// What the summary replaces: every surface event before the turn's
	// latest user message (those an earlier summary replaced included).
	r := s.derive()
	n, first, last, tokens := r.beforeUser, r.firstSurface, r.lastBeforeUsr, r.used
	msgs := r.beforeBoundary()
	r.mu.Unlock()
	ref := session.StepRef{Turn: turn, Step: step}
	if n == 0 {
		return "Nothing to compact yet: the conversation has no earlier messages.", false
	}
	msgs = append(msgs, llm.Message{Role: roleUser, Content: []session.Block{session.TextBlock(compactRequest)}})
	cfg := s.requestConfig() // the session's model, as its next request would name it
	var maxTokens *int
	if c := s.rt.cfg.Compaction; c != nil && c.MaxTokens > 0 {
		mt := c.MaxTokens
		maxTokens, cfg.MaxTokens = &mt, &mt
	}

	s.log.Append(TypeCompactStart, compactStart{Turn: turn})
	s.notice(ref, fmt.Sprintf("Compacting the conversation (%s): summarising %d earlier messages with %s.", why, n, cfg.Model))
	s.log.Append(session.TypeStepStart, ref)
	asm, _, _, err := s.stream(ctx, &llm.Request{SessionID: s.ID(), Config: cfg, System: compactPrompt, Messages: msgs}, ref)
	if err == nil {
		if f := asm.Finish(); f.Kind == llm.FinishError {
			err = &llm.Error{Message: f.Message, Code: f.Code}
		}
	}
	var b strings.Builder
	for _, bl := range asm.Content() {
		if bl.Type == session.BlockText {
			b.WriteString(bl.Text)
		}
	}
	summary := strings.TrimSpace(b.String())
	if err == nil && summary == "" {
		err = fmt.Errorf("the model wrote an empty summary")
	}
	s.log.Append(session.TypeStepEnd, ref)
	if err != nil {
		s.log.Append(TypeCompactEnd, compactEnd{Turn: turn, Error: err.Error()})
		text := "Compaction failed (" + err.Error() + "); the conversation goes on uncompacted."
		s.notice(ref, text)
		return text, false
	}
	s.log.Append(TypeCompactSummary, CompactSummary{Summary: summary, ShadowedRange: seqRange{Start: first, End: last},
		ShadowedTokenCount: tokens, Model: cfg.Model, MaxTokens: maxTokens})
	s.log.Append(TypeCompactEnd, compactEnd{Turn: turn})
	text := fmt.Sprintf("Compacted the conversation: %d earlier messages are now a summary of %d characters written by %s.", n, len(summary), cfg.Model)
	s.notice(ref, text)
	s.persist(ctx)
	return text, true
}

// CompactCommand is /compact: it summarises the conversation so far with
// one model call; later requests are derived from the summary.
func CompactCommand() Command {
	return Command{Name: "compact", Description: "Summarise the conversation so far to free context (one model call)",
		Run: func(ctx context.Context, s *Session, _ string) string { return s.Compact(ctx) }}
}
