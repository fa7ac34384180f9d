package agent

import (
	"context"

	"github.com/dsh-acp/dsh-acp/capabilities/pipeline"
	"github.com/dsh-acp/dsh-acp/session"
)

// narrators returns a narrator for every knob the composition offers that
// has a Narration, in anchoring order.
func (s *Session) narrators() []any {
	var out []any
	for _, k := range s.rt.knobs() {
		if k.Narration == nil {
			continue
		}
		if _, ok := s.knobDefault(k.ID); ok {
			out = append(out, &narrator{s: s, k: k})
		}
	}
	return out
}

// narrator tells the model, before a step, that its knob changed since it
// was last told (sandbox-approval-modes § 6, the approval policy's): a
// first step never narrates, an idle flip-flop that nets to no change
// narrates nothing, and the notice precedes step/start.
type narrator struct {
	s    *Session
	k    Knob
	told string // the value the model was last told ("" = not yet)
}

// Name implements pipeline.Namer.
func (n *narrator) Name() string { return n.k.Narration.Source + " narrator" }

// PrepareStep implements pipeline.StepPreparer.
func (n *narrator) PrepareStep(context.Context, pipeline.Conversation, pipeline.Step) (pipeline.StepDecision, error) {
	log := n.s.log
	current := n.s.folded(n.k.ID)
	told := n.told
	if told == "" {
		told = n.lastTold()
	}
	n.told = current
	if told == "" || told == current {
		return pipeline.StepDecision{}, nil
	}
	byUser := log.LastSeq(n.k.Event) > max(log.LastSeq(session.TypeRequestHeader), log.LastSeq(session.TypeRequestHeaderDelta))
	return pipeline.StepDecision{Notices: []pipeline.Context{{
		Source:  session.PluginSource(n.k.Narration.Source),
		Content: []session.Block{session.TextBlock(n.k.Narration.Text(told, current, byUser))},
	}}}, nil
}

// lastTold is what the latest request header told the model ("": no
// header yet).
func (n *narrator) lastTold() string {
	if told := n.k.Narration.Told; told != nil {
		r := n.s.derive()
		h, ok := r.hdr, r.hasHdr
		r.mu.Unlock()
		if !ok {
			return ""
		}
		return told(h)
	}
	log := n.s.log
	hi := max(log.LastSeq(session.TypeRequestHeader), log.LastSeq(session.TypeRequestHeaderDelta))
	if hi < 0 {
		return ""
	}
	events := log.Events()
	end := len(events)
	for end > 0 && events[end-1].Seq > hi {
		end--
	}
	if v := foldKnob(events[:end], n.k); v != "" {
		return v
	}
	def, _ := n.s.knobDefault(n.k.ID)
	return def
}
