package acp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// prompt handles session/prompt: validation, then the turn runs on its own
// goroutine and the answer follows its turn/end (or a cancel).
func (s *Server) prompt(ctx context.Context, r *request) (any, error) {
	var req PromptRequest
	if err := decode(r.params, &req); err != nil {
		return nil, err
	}
	// Without a key no turn can run: auth_required, so that the client
	// offers the sign-in, instead of a turn that fails at its model call.
	if err := s.requireKey(); err != nil {
		return nil, err
	}
	var ls *binding
	if err := s.withSession(req.SessionID, func(l *binding, _ bool) error {
		switch {
		case l == nil:
			return unknownSession(req.SessionID)
		case l.prompt != nil:
			return invalidParams("a prompt is already in flight for this session")
		}
		ls = l
		return nil
	}); err != nil {
		return nil, err
	}
	blocks := req.Prompt
	var images []session.Block
	if s.opts.PromptContext || s.opts.PromptCommands != nil {
		// Files are read without holding the bridge's lock; prompts are
		// handled one at a time in the read loop, so none can overtake
		// this one meanwhile, and only teardown needs checking again.
		var err error
		if s.opts.PromptContext {
			if blocks, err = withContext(blocks, ls.s.Log().Header().Cwd, s.imagesAccepted(ctx, ls)); err != nil {
				return nil, err
			}
			blocks, images = splitImages(blocks)
			if len(blocks) == 0 {
				blocks = []ContentBlock{{Type: "text", Text: "(see the image)"}}
			}
		}
		if blocks, err = s.expandBlocks(ls, blocks); err != nil {
			return nil, err
		}
	}
	var (
		text    string
		turnCtx context.Context
		cancel  context.CancelCauseFunc
		p       *inflight
	)
	if err := s.withSession(req.SessionID, func(*binding, bool) error {
		var err error
		if text, err = flatten(blocks, s.maxPrompt()); err != nil {
			return err
		}
		// The turn's context exists before the read loop moves on, so a
		// cancel that arrives right behind the prompt always reaches it.
		turnCtx, cancel = context.WithCancelCause(context.WithoutCancel(ctx))
		p = &inflight{id: r.id, cancel: cancel}
		ls.prompt = p
		s.work.Add(1)
		return nil
	}); err != nil {
		return nil, err
	}

	go func() {
		defer s.work.Done()
		defer cancel(nil)
		var reason session.EndReason
		if cp, ok := ls.s.(contentPrompter); ok && len(images) > 0 {
			reason = cp.PromptContent(turnCtx, append([]session.Block{session.TextBlock(text)}, images...))
		} else {
			reason = ls.s.Prompt(turnCtx, text)
		}
		// The answer claims the turn happened, so its events must be in the
		// store (the agent flushed at turn/end; a failed flush left them
		// pending, and this retries them).
		if err := ls.s.Log().Flush(context.WithoutCancel(ctx)); err != nil {
			s.log.Error().Err(err).Str("session", ls.s.ID()).Msg("turn not saved")
			s.settle(ls, p, func() { s.answer(r.id, nil, notSaved(err)) })
			return
		}
		s.mu.Lock()
		cancelled := p.cancelled
		s.mu.Unlock()
		if cancelled && reason.Kind != session.EndError {
			// The client cancelled: the answer is cancelled, however the
			// turn happened to end.
			reason = session.EndReason{Kind: session.EndAborted, Reason: errCancelled.Error()}
		}
		s.settle(ls, p, func() { s.answerTurn(r.id, reason) })
	}()
	return nil, errDeferred
}

// contentPrompter is a Session that takes a message of several blocks
// (images with the text).
type contentPrompter interface {
	PromptContent(ctx context.Context, content []session.Block) session.EndReason
}

// expandBlocks replaces a prompt command invocation (the prompt's text
// when it is one line of text starting with "/") by the command's prompt.
func (s *Server) expandBlocks(ls *binding, blocks []ContentBlock) ([]ContentBlock, error) {
	if s.opts.PromptCommands == nil || len(blocks) != 1 || blocks[0].Type != "text" {
		return blocks, nil
	}
	if text := s.expandCommand(ls, blocks[0].Text); text != blocks[0].Text {
		return []ContentBlock{{Type: "text", Text: text}}, nil
	}
	return blocks, nil
}

// settle answers p once: the first of turn end and cancel wins.
func (s *Server) settle(ls *binding, p *inflight, answer func()) {
	s.mu.Lock()
	if p.settled {
		if ls.prompt == p {
			ls.prompt = nil
		}
		s.mu.Unlock()
		return
	}
	p.settled = true
	if ls.prompt == p {
		ls.prompt = nil
	}
	s.mu.Unlock()
	answer()
}

// answerTurn maps a turn/end reason to the prompt's answer.
func (s *Server) answerTurn(id RequestID, r session.EndReason) {
	switch r.Kind {
	case session.EndMaxTokens:
		s.answer(id, PromptResponse{StopMaxTokens}, nil)
	case session.EndAborted, session.EndDisposed, session.EndRejected:
		s.answer(id, PromptResponse{StopCancelled}, nil)
	case session.EndError:
		s.answer(id, nil, s.turnFailed(r))
	default:
		s.answer(id, PromptResponse{StopEndTurn}, nil)
	}
}

// cancel handles the session/cancel notification.
func (s *Server) cancel(params json.RawMessage) {
	var req CancelNotification
	if json.Unmarshal(params, &req) != nil {
		return
	}
	s.mu.Lock()
	ls := s.sessions[req.SessionID]
	var p *inflight
	if ls != nil {
		p = ls.prompt
	}
	s.mu.Unlock()
	if ls == nil {
		return
	}
	ls.s.Cancel(string(MethodSessionCancel))
	if p == nil {
		return
	}
	if s.opts.CancelAfterTeardown {
		// The prompt's goroutine answers once the turn has ended.
		s.mu.Lock()
		p.cancelled = true
		s.mu.Unlock()
		p.cancel(errCancelled)
		return
	}
	p.cancel(errCancelled)
	s.settle(ls, p, func() { s.answer(p.id, PromptResponse{StopCancelled}, nil) })
}

// errCancelled is the cause of a turn context cancelled by session/cancel.
var errCancelled = errors.New("session/cancel")

// DefaultMaxPromptBytes bounds a prompt's text when
// Options.MaxPromptBytes is zero.
const DefaultMaxPromptBytes = 4 << 20

func (s *Server) maxPrompt() int {
	if s.opts.MaxPromptBytes > 0 {
		return s.opts.MaxPromptBytes
	}
	return DefaultMaxPromptBytes
}

// flatten turns prompt blocks into the one user text the agent receives
// (acp-bridge § 5), refusing more than max bytes of it. A single text block
// is passed on without a copy; several are joined in one allocation.
func flatten(blocks []ContentBlock, max int) (string, error) {
	links := make([][]byte, len(blocks))
	size := 0
	for i, c := range blocks {
		switch c.Type {
		case "text":
			size += len(c.Text)
		case "resource_link":
			name, _ := jsonx.Marshal(c.Name)
			uri, _ := jsonx.Marshal(c.URI)
			links[i] = []byte("\n[resource_link name=" + string(name) + " uri=" + string(uri) + "]\n")
			size += len(links[i])
		default:
			return "", invalidParams("only text and resource_link prompt content is supported; image/audio/embedded resource blocks are rejected rather than silently dropped")
		}
	}
	if size > max {
		return "", invalidParams("prompt too large: %d bytes of text exceed the %s limit (maxPromptBytes); send less text, or reference large content as a file", size, formatSize(max))
	}
	var text string
	if len(blocks) == 1 && blocks[0].Type == "text" {
		text = blocks[0].Text
	} else {
		var b strings.Builder
		b.Grow(size)
		for i, c := range blocks {
			if links[i] != nil {
				b.Write(links[i])
			} else {
				b.WriteString(c.Text)
			}
		}
		text = b.String()
	}
	if strings.TrimSpace(text) == "" {
		return "", invalidParams("empty prompt")
	}
	return text, nil
}
