package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

// Prompt runs one turn for the user's text and returns how it ended, once
// turn/end is in the log (session-log contract § 3). A cancel that lands
// while the turn waits for a previous one drops it (and every prompt queued
// before the cancel): nothing is logged and the reason is "aborted". A
// prompt queued after the cancel runs normally.
func (s *Session) Prompt(ctx context.Context, text string) session.EndReason {
	return s.PromptContent(ctx, []session.Block{session.TextBlock(text)})
}

// PromptContent is Prompt for a message of several blocks (text and
// images); a slash command is recognised in its text.
func (s *Session) PromptContent(ctx context.Context, content []session.Block) session.EndReason {
	s.mu.Lock()
	s.tickets++
	ticket := s.tickets
	s.mu.Unlock()
	s.turnMu.Lock()
	defer s.turnMu.Unlock()

	turnCtx, cancel, turn, end, ok := s.openTurn(ctx, ticket)
	if !ok {
		return end
	}
	s.rt.idle.begin()
	defer s.rt.idle.end()
	defer func() {
		s.mu.Lock()
		s.cancel = nil
		s.mu.Unlock()
		cancel()
	}()
	reason := s.promptTurn(ctx, turnCtx, turn, content)
	s.mu.Lock()
	s.inTurn = false // an injection now waits for turnMu and opens its own turn
	late := s.takeInjected()
	s.steering = nil
	s.mu.Unlock()
	s.appendInjected(late)
	s.log.Append(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: reason})
	if err := s.log.Flush(context.WithoutCancel(ctx)); err != nil {
		s.rt.cfg.Log.Error().Err(err).Str("session", s.ID()).Msg("persist session log")
	}
	return reason
}

// openTurn starts the turn of the prompt holding ticket, with turn/start
// logged, unless it is dropped: the session is disposed, ctx ended before
// the turn started, or a cancel arrived while the prompt was queued
// (prompts queued after that cancel run normally).
func (s *Session) openTurn(ctx context.Context, ticket int) (context.Context, context.CancelFunc, int, session.EndReason, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	drop := ""
	if ticket <= s.dropUpTo {
		drop = s.dropReason
	}
	switch {
	case s.disposed:
		return nil, nil, 0, session.EndReason{Kind: session.EndDisposed}, false
	case ctx.Err() != nil:
		return nil, nil, 0, session.EndReason{Kind: session.EndAborted, Reason: context.Cause(ctx).Error()}, false
	case drop != "":
		return nil, nil, 0, session.EndReason{Kind: session.EndAborted, Reason: drop}, false
	}
	turnCtx, cancel := context.WithCancel(ctx)
	s.cancel, s.abortReason = cancel, ""
	turn := s.log.LastTurn() + 1
	s.log.Append(session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: session.TriggerMessage, Source: session.UserSource}})
	s.inTurn = true
	return turnCtx, cancel, turn, session.EndReason{}, true
}

// promptTurn runs an open turn: the prompt-submit chain, then the user's
// message and either its slash command or the model's steps.
func (s *Session) promptTurn(ctx, turnCtx context.Context, turn int, content []session.Block) session.EndReason {
	prompt := pipeline.Prompt{Turn: turn, Content: content, Source: session.UserSource}
	d := s.pipe.SubmitPrompt(turnCtx, s, prompt)
	if d.Block {
		// The turn's only prompt is blocked: the turn is rejected.
		if d.Reason == "" {
			d.Reason = "blocked by the prompt-submit chain"
		}
		s.log.Append(session.TypePromptBlocked, promptBlocked{Content: prompt.Content, Source: prompt.Source, Reason: d.Reason})
		return session.EndReason{Kind: session.EndRejected, Reason: d.Reason}
	}
	s.log.Append(session.TypeUserMessage, session.Message{Content: prompt.Content, Source: prompt.Source})
	s.appendContext(d.Context)
	s.persist(ctx)
	var tb strings.Builder
	for _, b := range content {
		if b.Type == session.BlockText {
			tb.WriteString(b.Text)
		}
	}
	if c, args, ok := s.command(tb.String()); ok {
		s.runCommand(turnCtx, c, args)
		return session.EndReason{Kind: session.EndCompleted}
	}
	return s.runSteps(turnCtx, turn)
}

// promptBlocked is the data of prompt/blocked.
type promptBlocked struct {
	Content []session.Block `json:"content"`
	Source  session.Source  `json:"source"`
	Reason  string          `json:"reason"`
}

// steeringMessage is the data of steering/message.
type steeringMessage struct {
	Turn    int             `json:"turn"`
	Content []session.Block `json:"content"`
	Source  session.Source  `json:"source"`
}

// appendContext appends additional context as one context/message.
func (s *Session) appendContext(c *pipeline.Context) {
	if c == nil || len(c.Content) == 0 {
		return
	}
	s.log.Append(session.TypeContextMessage, session.Message{Content: c.Content, Source: c.Source})
}

// persist hands the log to the store without waiting for the disk. Besides
// every turn/end (upstream's only durable point, flushed with fsync), the
// loop persists after the user's message, after each assistant message and
// after each tool result, so a crash of the process loses at most the
// chunks of one streaming step and crash repair can close the turn on the
// next load.
func (s *Session) persist(ctx context.Context) {
	if err := s.log.Write(context.WithoutCancel(ctx)); err != nil {
		s.rt.cfg.Log.Error().Err(err).Str("session", s.ID()).Msg("persist session log")
	}
}

// abortEnd returns the end reason for an aborted turn (it takes s.mu).
func (s *Session) abortEnd(ctx context.Context) session.EndReason {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The first abort decides: a turn cancelled before the session was
	// disposed ended because of the cancel, however late it notices.
	if s.abortReason == "disposed" || (s.disposed && s.abortReason == "") {
		return session.EndReason{Kind: session.EndDisposed}
	}
	reason := s.abortReason
	if reason == "" {
		reason = context.Cause(ctx).Error()
	}
	return session.EndReason{Kind: session.EndAborted, Reason: reason}
}

// turnState is what the steps of one turn carry from one to the next.
type turnState struct {
	turn      int
	maxTokens bool // a step's answer was cut at its output limit
	retried   bool // an empty answer was asked for again
	compacted bool // the turn compacted the conversation once
}

// runSteps runs steps until the model stops calling tools or a step fails.
func (s *Session) runSteps(ctx context.Context, turn int) session.EndReason {
	t := &turnState{turn: turn}
	for step := 1; ; step++ {
		if end, ok := s.mayStep(ctx, step); !ok {
			return end
		}
		if !t.compacted && s.shouldCompact() {
			// One summarising call, as a step of its own; the next
			// request is derived from the summary (or, if it failed, from
			// the whole conversation as before).
			t.compacted = true
			s.compact(ctx, turn, step, "the context passed its threshold")
			continue
		}
		more, end, over := s.runStep(ctx, t, step)
		if over {
			return end
		}
		if !more {
			break
		}
	}
	if t.maxTokens {
		return session.EndReason{Kind: session.EndMaxTokens}
	}
	return session.EndReason{Kind: session.EndCompleted}
}

// mayStep reports whether step may start: the turn is not cancelled, the
// step limit is not passed, the delegation family allows a model call.
func (s *Session) mayStep(ctx context.Context, step int) (session.EndReason, bool) {
	if ctx.Err() != nil {
		return s.abortEnd(ctx), false
	}
	if max := s.rt.maxSteps(); step > max {
		return session.EndReason{Kind: session.EndError, Step: step - 1, Code: CodeStepLimit, Message: fmt.Sprintf(
			"stopped after %d model calls in one turn (the step limit): the model kept calling tools. "+
				"Send another prompt to let it go on, or raise maxSteps in the configuration.", max)}, false
	}
	return s.stepAllowed(step)
}

// runStep runs one step: the model call, its answer, its tool calls and
// the continuation decision. It reports whether the turn goes on, or
// (over) how it ended.
func (s *Session) runStep(ctx context.Context, t *turnState, step int) (more bool, end session.EndReason, over bool) {
	ref := session.StepRef{Turn: t.turn, Step: step}
	req, end, ok := s.stepRequest(ctx, ref)
	if !ok {
		return false, end, true
	}
	asm, seqs, oversized, err := s.stream(ctx, req, ref)
	if err == nil {
		err = finishError(ctx, asm.Finish())
	}
	if err != nil || ctx.Err() != nil {
		return false, s.failedStep(ctx, ref, err), true
	}
	content, retry := s.answer(t, ref, asm, oversized)
	if retry {
		return true, end, false
	}
	s.recordAnswer(ctx, ref, asm, content, seqs)
	calls, contexts := s.runToolCalls(ctx, ref, toolCalls(content), oversized)
	for _, c := range contexts {
		s.appendContext(c)
	}
	s.log.Append(session.TypeStepEnd, ref)
	final := ctx.Err() != nil
	d := s.pipe.DecideContinuation(ctx, s, pipeline.StepEnd{Turn: t.turn, Step: step, ToolCalls: calls, Continue: calls > 0, Final: final})
	if final || ctx.Err() != nil {
		return false, s.abortEnd(ctx), true
	}
	more = calls > 0
	switch d.Verdict {
	case pipeline.ContinueForce:
		more = true
		if d.Steering != nil && len(d.Steering.Content) > 0 {
			s.steering = append(s.steering, *d.Steering)
		}
	case pipeline.ContinueStop:
		more = false
	}
	return more, end, false
}

// stepRequest opens a step: the held steering and the step preparers'
// notices are logged, the request is derived from the log, and step/start
// with the request header (or its delta) is appended. A conversation that
// does not derive ends the turn (false).
func (s *Session) stepRequest(ctx context.Context, ref session.StepRef) (*llm.Request, session.EndReason, bool) {
	for _, st := range s.steering {
		s.log.Append(session.TypeSteeringMessage, steeringMessage{Turn: ref.Turn, Content: st.Content, Source: st.Source})
	}
	s.steering = nil
	for _, n := range s.pipe.PrepareStep(ctx, s, pipeline.Step{Turn: ref.Turn, Step: ref.Step}) {
		s.appendContext(&n)
	}
	hdr := s.header()
	r := s.derive()
	msgs, _, err := r.messages()
	prev, hasPrev := r.hdr, r.hasHdr
	if err == nil && s.rt.cfg.CheckDerivation {
		err = s.checkDerivation(r)
	}
	r.mu.Unlock()
	if err != nil {
		return nil, session.EndReason{Kind: session.EndError, Step: ref.Step, Code: CodeInvalidHistory,
			Message: "refusing to send an invalid conversation to the model: " + err.Error()}, false
	}
	s.log.Append(session.TypeStepStart, ref)
	if typ, data := headerEventFor(prev, hasPrev, hdr, !s.headerSent); typ != "" {
		s.log.Append(typ, data)
	}
	s.headerSent = true
	return &llm.Request{SessionID: s.ID(), Config: hdr.Config, System: hdr.System, Tools: hdr.Tools, Messages: msgs}, session.EndReason{}, true
}

// finishError is the error of a stream that finished badly: the
// provider's error, or an abort the turn did not ask for.
func finishError(ctx context.Context, f llm.FinishReason) error {
	switch f.Kind {
	case llm.FinishError:
		return &llm.Error{Message: f.Message, Code: f.Code}
	case llm.FinishAborted:
		if ctx.Err() == nil {
			return &llm.Error{Message: "model stream aborted", Code: "ABORTED"}
		}
	}
	return nil
}

// failedStep closes a step whose model call failed or was cancelled and
// returns how the turn ends.
func (s *Session) failedStep(ctx context.Context, ref session.StepRef, err error) session.EndReason {
	s.log.Append(session.TypeStepEnd, ref)
	s.pipe.DecideContinuation(ctx, s, pipeline.StepEnd{Turn: ref.Turn, Step: ref.Step, Final: true})
	if ctx.Err() != nil {
		return s.abortEnd(ctx)
	}
	end := session.EndReason{Kind: session.EndError, Step: ref.Step, Message: err.Error(), Code: llm.ErrorCode(err)}
	var le *llm.Error
	if errors.As(err, &le) {
		end.Hint = le.Hint
	}
	return end
}

// answer is the content of the step's answer the history keeps: an empty
// answer is asked for again once (retry: the step is closed); an answer
// cut at max tokens loses its tool calls; a call whose arguments passed
// the cap keeps empty arguments.
func (s *Session) answer(t *turnState, ref session.StepRef, asm *llm.Assembler, oversized map[string]int) (content []session.Block, retry bool) {
	content = asm.Content()
	finish := asm.Finish()
	if s.rt.cfg.RetryEmpty && !t.retried && emptyAnswer(content, finish) {
		t.retried = true
		s.notice(ref, EmptyRetryNotice)
		s.log.Append(session.TypeStepEnd, ref)
		return nil, true
	}
	if finish.Kind == llm.FinishMaxTokens {
		t.maxTokens = true
		if dropped := droppedCalls(content); len(dropped) > 0 && s.rt.cfg.NoticeDroppedCalls {
			s.notice(ref, droppedNotice(dropped))
		}
		kept := content[:0:0]
		for _, b := range content {
			if b.Type != session.BlockToolCall {
				kept = append(kept, b)
			}
		}
		content = kept
	}
	for i, b := range content {
		if _, big := oversized[b.ID]; big && b.Type == session.BlockToolCall {
			// The model's arguments were cut at the cap: the history
			// keeps the call with empty arguments, and its result says
			// why nothing ran.
			content[i].Arguments = "{}"
		}
	}
	return content, false
}

// recordAnswer appends the step's assistant/message (with its usage and
// the chunks it came from) and hands it to the store.
func (s *Session) recordAnswer(ctx context.Context, ref session.StepRef, asm *llm.Assembler, content []session.Block, seqs []int) {
	if len(content) == 0 && asm.Usage() == nil {
		return
	}
	msg := session.AssistantMessage{Turn: ref.Turn, Step: ref.Step, Content: content}
	if u := asm.Usage(); u != nil {
		msg.Usage = session.Data(u)
	}
	var opts []session.AppendOption
	if len(seqs) > 0 {
		opts = append(opts, session.WithSourceSeqs(seqs))
	}
	s.log.Append(session.TypeAssistantMessage, msg, opts...)
	s.persist(ctx)
}

// stream runs one model call, appending one assistant/chunk per chunk. A
// tool call whose arguments grow past the cap (Config.MaxToolArgBytes) ends
// the call there: the stream is dropped, the step finishes as a tool-call
// step, and oversized maps the call's id to the bytes received, so memory
// stays bounded by the cap.
func (s *Session) stream(ctx context.Context, req *llm.Request, ref session.StepRef) (asm *llm.Assembler, seqs []int, oversized map[string]int, err error) {
	asm = &llm.Assembler{}
	limit := s.rt.maxToolArgBytes()
	// The provider's notices (a retry after a rate limit) are logged for
	// the user; the model never sees them.
	ctx = llm.WithNoticer(ctx, func(text string) {
		s.log.Append(TypeModelNotice, ModelNotice{Turn: ref.Turn, Step: ref.Step, Text: text})
	})
	for c, err := range s.rt.cfg.Provider.Stream(ctx, req) {
		if err != nil {
			return asm, seqs, oversized, err
		}
		if c.Type == llm.ChunkToolCallDelta {
			if id, n := asm.ToolArgs(c.Index); n+len(c.ArgumentsDelta) > limit {
				oversized = map[string]int{id: n + len(c.ArgumentsDelta)}
				asm.Add(llm.Chunk{Type: llm.ChunkFinish, Reason: &llm.FinishReason{Kind: llm.FinishToolCalls}})
				break
			}
		}
		raw, merr := c.MarshalJSON()
		if merr != nil {
			return asm, seqs, oversized, merr
		}
		ev := s.log.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: ref.Turn, Step: ref.Step, Chunk: raw, Kind: string(c.Type), Text: c.Text})
		seqs = append(seqs, ev.Seq)
		asm.Add(c)
		if c.Type == llm.ChunkFinish {
			break
		}
	}
	if ctx.Err() != nil {
		return asm, seqs, oversized, ctx.Err()
	}
	return asm, seqs, oversized, nil
}
