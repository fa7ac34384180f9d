package agent

import (
	"context"
	"fmt"

	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

// builtinMembers are the runtime's own pipeline members, ahead of the
// composition's: the mode service (when modes are composed), knob
// anchoring, background-task notices and the narrators of the offered
// knobs that have one (the approval policy's).
func (s *Session) builtinMembers() []any {
	var ms []any
	if s.rt.cfg.Modes != nil {
		ms = append(ms, &modeService{s: s})
	}
	if s.rt.cfg.ToolModeKnob {
		ms = append(ms, toolModeGate{s: s})
	}
	ms = append(ms, knobAnchor{s: s}, injections{s: s})
	return append(ms, s.narrators()...)
}

// modeService puts session modes on the pipeline
// (sandbox-approval-modes § 8): at the turn's first prompt it announces an
// undefined logged mode and flushes a held switch; it gates every tool call
// by the logged mode; after each step/end it flushes a held switch again.
type modeService struct {
	s       *Session
	noticed map[string]bool // undefined modes already announced
}

// Name implements pipeline.Namer.
func (*modeService) Name() string { return "mode" }

// SubmitPrompt implements pipeline.PromptSubmitter: the turn-start flush
// point, ahead of knob anchoring and hooks.
func (m *modeService) SubmitPrompt(context.Context, pipeline.Conversation, pipeline.Prompt) (pipeline.PromptDecision, error) {
	m.noticeUndefined()
	m.flush()
	return pipeline.PromptDecision{}, nil
}

// CheckTool implements pipeline.ToolGate: deny-by-default by the logged
// mode, before the tool lookup.
func (m *modeService) CheckTool(_ context.Context, _ pipeline.Conversation, c pipeline.Call) (pipeline.ToolDecision, error) {
	t, _ := m.s.tools.Lookup(c.Name)
	if ok, why := m.s.rt.allowedIn(m.s.LoggedMode(), t, c.Name); !ok {
		return pipeline.ToolDecision{Verdict: pipeline.ToolDeny, Reason: why}, nil
	}
	return pipeline.ToolDecision{}, nil
}

// DecideContinuation implements pipeline.Continuer: the step-end flush
// point (also after a failed step); it never changes the decision.
func (m *modeService) DecideContinuation(context.Context, pipeline.Conversation, pipeline.StepEnd) (pipeline.ContinueDecision, error) {
	m.flush()
	return pipeline.ContinueDecision{}, nil
}

// flush appends a pending mode switch and, when the model has already seen
// a request in another mode, a notice telling it.
func (m *modeService) flush() {
	s := m.s
	s.mu.Lock()
	p := s.pendingMode
	s.pendingMode = ""
	s.mu.Unlock()
	if p == "" || p == s.loggedMode() {
		return
	}
	r := s.derive()
	seen, sawHdr := r.headerMode(), r.sawHdr
	r.mu.Unlock()
	s.log.Append(session.TypeModeSet, struct {
		Mode string `json:"mode"`
	}{p})
	if !sawHdr || seen == p {
		return
	}
	text := "The user switched this session to " + p + " mode."
	if p == DefaultMode {
		text = "The user switched this session back to the default mode."
	}
	s.log.Append(session.TypeContextMessage, session.Message{Content: []session.Block{session.TextBlock(text)},
		Source: session.PluginSource("mode")})
}

// noticeUndefined tells the model once per session and mode that its
// logged mode no longer exists.
func (m *modeService) noticeUndefined() {
	s := m.s
	mode := s.loggedMode()
	if mode == DefaultMode {
		return
	}
	if _, ok := s.rt.modeDef(mode); ok {
		return
	}
	if m.noticed == nil {
		m.noticed = map[string]bool{}
	}
	if m.noticed[mode] {
		return
	}
	m.noticed[mode] = true
	s.log.Append(session.TypeContextMessage, session.Message{Content: []session.Block{session.TextBlock(
		fmt.Sprintf("Mode %q is no longer defined in this deployment's configuration; the session continues in the default mode.", mode))},
		Source: session.PluginSource("mode")})
}

// knobAnchor appends held knob switches inside the prompt-submit chain
// (sandbox-approval-modes § 7): after the mode flush, before hooks and
// user/message; in the knobs' anchoring order (sandbox mode first, then
// approval policy), each only if it still differs from the log.
type knobAnchor struct{ s *Session }

// Name implements pipeline.Namer.
func (knobAnchor) Name() string { return "knobs" }

// SubmitPrompt implements pipeline.PromptSubmitter.
func (k knobAnchor) SubmitPrompt(context.Context, pipeline.Conversation, pipeline.Prompt) (pipeline.PromptDecision, error) {
	s := k.s
	for _, kn := range s.rt.knobs() {
		s.mu.Lock()
		v, ok := s.pending[kn.ID]
		delete(s.pending, kn.ID)
		s.mu.Unlock()
		if ok && v != s.folded(kn.ID) {
			s.log.Append(kn.Event, kn.Payload(v))
		}
	}
	return pipeline.PromptDecision{}, nil
}

// injections hands context injected during the turn (a finished
// background task) to the model at the next step boundary.
type injections struct{ s *Session }

// Name implements pipeline.Namer.
func (injections) Name() string { return "injections" }

// PrepareStep implements pipeline.StepPreparer.
func (in injections) PrepareStep(context.Context, pipeline.Conversation, pipeline.Step) (pipeline.StepDecision, error) {
	in.s.mu.Lock()
	q := in.s.takeInjected()
	in.s.mu.Unlock()
	var d pipeline.StepDecision
	for _, m := range q {
		d.Notices = append(d.Notices, pipeline.Context{Source: m.Source, Content: m.Content})
	}
	return d, nil
}

// start runs the pipeline's session-start members detached; what they
// return is injected (a one-shot injection turn while idle). Close stops
// and waits for them.
func (s *Session) start(source string) {
	if !s.pipe.HasStarters() {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	s.mu.Lock()
	s.bgStop = stop
	s.mu.Unlock()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer stop()
		if c := s.pipe.StartSession(ctx, s, source); c != nil {
			s.inject(session.Message{Content: c.Content, Source: c.Source})
		}
	}()
}
