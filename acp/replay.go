package acp

import (
	"github.com/dsh-acp/dsh-acp/agent/llm"
	"github.com/dsh-acp/dsh-acp/session"
)

// replayLog shows a loaded session's whole log through send, as p
// presents each event. With merge (Options.MergeReplayChunks) a message's
// consecutive text chunks of one kind reach the editor as one update: a
// chunk's delta is then read in place and appended to the run, with no
// update built for it.
func replayLog(p *presenter, events []session.Event, merge bool, send func(any)) {
	var m chunkMerger
	for i := range events {
		ev := &events[i]
		if merge && ev.Type == session.TypeAssistantChunk && ev.Payload == nil {
			if kind, text, ok := ev.ChunkDeltaBytes(); ok {
				switch llm.ChunkType(kind) {
				case llm.ChunkTextDelta:
					m.addText(UpdateAgentMessageChunk, text, send)
					continue
				case llm.ChunkReasoningDelta:
					m.addText(UpdateAgentThoughtChunk, text, send)
					continue
				}
			}
		}
		us := p.present(*ev)
		if !merge {
			for _, u := range us {
				send(u)
			}
			continue
		}
		for _, u := range us {
			m.add(u, send)
		}
		if ev.Type == session.TypeAssistantMessage {
			m.flush(send) // the message is complete
		}
	}
	m.flush(send)
}
